import Foundation
import Synchronization
import SyncEngine
import Testing
import TestSupport

/// The contract of `RemoteStore` (see its doc comment), run over every implementation.
@Suite("RemoteStore contract")
struct RemoteStoreContractTests {
    @Test("an empty store lists nothing and its root is a folder", arguments: StoreKind.available)
    func emptyStore(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            #expect(try await f.store.children(of: .root).isEmpty)
            #expect(try await f.store.descendants(of: .root).isEmpty)
            #expect(try await f.store.entry(at: .root).kind == .folder)
            await expectCode(.noSuchItem) { try await f.store.entry(at: p("missing")) }
        }
    }

    @Test("folders are created once, inside existing parents", arguments: StoreKind.available)
    func folders(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            let a = try await f.store.makeFolder(at: p("a"))
            #expect(a.kind == .folder && a.path == p("a"))
            _ = try await f.store.makeFolder(at: p("a/b"))
            await expectCode(.filenameCollision) { try await f.store.makeFolder(at: p("a")) }
            await expectCode(.parentMissing) { try await f.store.makeFolder(at: p("x/y")) }
            #expect(try await f.store.children(of: p("a")).map(\.path) == [p("a/b")])
        }
    }

    @Test("an upload creates a file whose bytes and size read back", arguments: StoreKind.available)
    func uploadAndDownload(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            let entry = try await f.put(p("hello.txt"), "hello, world")
            #expect(entry.kind == .file && entry.size == 12 && entry.etag != nil)
            #expect(try await f.read(p("hello.txt")) == "hello, world")
            await expectCode(.filenameCollision) { try await f.put(p("hello.txt"), "other") }
            #expect(try await f.read(p("hello.txt")) == "hello, world")
            // Seen on a fresh-clone run: WsgiDAV's server (cheroot) answers 409 before it has
            // read the body and closes the connection, and the client may see only the close.
            await withKnownIssue("WsgiDAV may close the connection of a PUT into a missing folder instead of answering 409",
                                 isIntermittent: true) {
                await expectCode(.parentMissing) { try await f.put(p("nope/x.txt"), "x") }
            } when: { kind == .wsgidav }
        }
    }

    @Test("an empty file uploads and downloads", arguments: StoreKind.available)
    func emptyFile(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            let entry = try await f.put(p("empty"), "")
            #expect(entry.size == 0 && entry.kind == .file)
            #expect(try await f.read(p("empty")) == "")
        }
    }

    @Test("a write based on the current version succeeds; on an old one it is refused", arguments: StoreKind.available)
    func guardedWrites(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            let first = try await f.put(p("doc.txt"), "version 1")
            let second = try await f.store.upload(from: f.localFile("version two"), to: p("doc.txt"),
                                                  condition: .mustMatch(first.etag!), progress: nil)
            #expect(second.etag.map { !$0.sameValue(as: first.etag!) } == true)
            await expectCode(.versionMismatch) {
                try await f.store.upload(from: f.localFile("stale"), to: p("doc.txt"), condition: .mustMatch(first.etag!), progress: nil)
            }
            #expect(try await f.read(p("doc.txt")) == "version two")
            await expectCode(.noSuchItem) {
                try await f.store.upload(from: f.localFile("x"), to: p("gone.txt"), condition: .mustMatch(first.etag!), progress: nil)
            }
        }
    }

    @Test("two clients replacing one file at once from the same version: one lands, the other is told", arguments: StoreKind.available)
    func concurrentReplaces(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            let other = try f.otherClient()
            defer { Task { await f.close(client: other) } }
            // Bodies big enough that the two PUTs overlap on the server: Apache checked both
            // If-Match headers before either body was written, and answered both 204.
            let size = 8 << 20
            let mine = f.scratch.appendingPathComponent("mine"), theirs = f.scratch.appendingPathComponent("theirs")
            try Data(repeating: UInt8(ascii: "m"), count: size).write(to: mine)
            try Data(repeating: UInt8(ascii: "t"), count: size).write(to: theirs)
            for round in 0..<3 {
                let base = try await f.put(p("doc-\(round).txt"), "the version both start from")
                async let first = Self.outcome { try await f.store.upload(from: mine, to: p("doc-\(round).txt"), condition: .mustMatch(base.etag!), progress: nil) }
                async let second = Self.outcome { try await other.upload(from: theirs, to: p("doc-\(round).txt"), condition: .mustMatch(base.etag!), progress: nil) }
                let outcomes = await [first, second]
                let landed = outcomes.filter { $0 == nil }.count
                // Apache checks If-Match before it reads the body and holds nothing while it
                // writes: both land (issue 13, item 4). The lock-guarded replace that fixed it
                // corrupted Apache's lock database under load and is withdrawn (README).
                // (WsgiDAV, which did the same, is written to with locks now: its PUT is not atomic.)
                withKnownIssue("Apache answers two PUTs with the same If-Match, sent at once, both with success", isIntermittent: true) {
                    #expect(landed == 1, "round \(round): \(outcomes.map { $0.map { "\($0.code)" } ?? "landed" }) — a version was lost without a word")
                } when: { kind == .apache || kind == .apacheDepthInfinity } matching: { _ in landed == 2 }
                guard landed == 1 else { continue }
                for case let code? in outcomes.map({ $0?.code }) {
                    #expect(code == .versionMismatch || code == .locked, "round \(round): \(code)")
                }
                let text = try await f.read(p("doc-\(round).txt"))
                #expect(text.count == size && text.first == (outcomes[0] == nil ? "m" : "t"), "round \(round): the server holds the one that was told it lost")
            }
        }
    }

    /// Nil when `body` succeeded, else the ProviderError it threw.
    static func outcome(_ body: () async throws -> RemoteEntry) async -> ProviderError? {
        do { _ = try await body(); return nil } catch let error as ProviderError { return error } catch {
            return ProviderError(.cannotSynchronize, "\(error)")
        }
    }

    @Test("saves in quick succession are not conflicts (Apache's weak-ETag second)", arguments: StoreKind.available)
    func quickSaves(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            var name = "busy.txt"
            var entry = try await f.put(p(name), "save 0")
            if kind == .apache || kind == .apacheDepthInfinity {
                // On a loaded machine the PUT and its HEAD can straddle the second (two
                // fresh-clone suites side by side did, five times in a row); more tries land
                // inside it.
                for attempt in 1...30 where entry.etag?.isWeak != true {
                    name = "busy-\(attempt).txt"
                    entry = try await f.put(p(name), "save 0")
                }
                #expect(entry.etag?.isWeak == true, "Apache should still be in its weak-ETag second; the test proves nothing otherwise")
            }
            let stale = entry.etag!
            for n in 1...3 {
                entry = try await f.store.upload(from: f.localFile("save \(n) " + String(repeating: "x", count: n)),
                                                 to: p(name), condition: .mustMatch(entry.etag!), progress: nil)
            }
            #expect(try await f.read(p(name)) == "save 3 xxx")
            await expectCode(.versionMismatch) {  // a real change inside the second is still a mismatch
                try await f.store.upload(from: f.localFile("late"), to: p(name), condition: .mustMatch(stale), progress: nil)
            }
            try await f.store.delete(p(name), version: entry.etag)
            await expectCode(.noSuchItem) { try await f.store.entry(at: p(name)) }
        }
    }

    @Test("ranges download only their bytes; a stale version is refused", arguments: StoreKind.available)
    func ranges(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            let entry = try await f.put(p("abc"), "ABCDEFGHIJKLMNOP")
            let target = f.scratch.appendingPathComponent("range")
            let version = try await f.store.download(p("abc"), range: ByteRange(offset: 2, length: 4),
                                                     version: entry.etag, to: target, progress: nil)
            #expect(String(decoding: try Data(contentsOf: target), as: UTF8.self) == "CDEF")
            #expect(version.map { $0.sameValue(as: entry.etag!) } == true)
            let tail = f.scratch.appendingPathComponent("tail")
            _ = try await f.store.download(p("abc"), range: ByteRange(offset: 14, length: 10), version: nil, to: tail, progress: nil)
            #expect(String(decoding: try Data(contentsOf: tail), as: UTF8.self) == "OP")
            let past = f.scratch.appendingPathComponent("past")
            _ = try await f.store.download(p("abc"), range: ByteRange(offset: 100, length: 10), version: nil, to: past, progress: nil)
            #expect(try Data(contentsOf: past).isEmpty)
            _ = try await f.store.upload(from: f.localFile("changed!"), to: p("abc"), condition: .mustMatch(entry.etag!), progress: nil)
            await expectCode(.versionMismatch) {
                try await f.store.download(p("abc"), range: nil, version: entry.etag, to: target, progress: nil)
            }
            await expectCode(.noSuchItem) { try await f.store.download(p("missing"), range: nil, version: nil, to: target, progress: nil) }
        }
    }

    @Test("a range written into an open file lands at its own offsets and nowhere else; a stale version writes nothing",
          arguments: StoreKind.available)
    func rangeIntoDescriptor(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            let entry = try await f.put(p("abc"), "ABCDEFGHIJKLMNOP")
            let target = f.scratch.appendingPathComponent("placeholder").path
            try Data("................".utf8).write(to: URL(fileURLWithPath: target))
            let fd = open(target, O_RDWR | O_CLOEXEC)
            try #require(fd >= 0)
            defer { close(fd) }
            let written = try await f.store.download(p("abc"), range: ByteRange(offset: 4, length: 6), version: entry.etag!,
                                                     intoDescriptor: fd, progress: nil)
            #expect(written == 6)
            #expect(readFile(target) == "....EFGHIJ......")
            // Clamped at the end of the file.
            #expect(try await f.store.download(p("abc"), range: ByteRange(offset: 14, length: 10), version: entry.etag!,
                                               intoDescriptor: fd, progress: nil) == 2)
            #expect(readFile(target) == "....EFGHIJ....OP")
            _ = try await f.store.upload(from: f.localFile("changed, and longer"), to: p("abc"), condition: .mustMatch(entry.etag!),
                                         progress: nil)
            await expectCode(.versionMismatch) {
                try await f.store.download(p("abc"), range: ByteRange(offset: 0, length: 4), version: entry.etag!,
                                           intoDescriptor: fd, progress: nil)
            }
            #expect(readFile(target) == "....EFGHIJ....OP")
        }
    }

    @Test("children lists one level, descendants the whole tree", arguments: StoreKind.available)
    func listings(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            for folder in ["a", "a/b", "a/b/c", "d"] { _ = try await f.store.makeFolder(at: p(folder)) }
            for file in ["top.txt", "a/one.txt", "a/b/two.txt", "a/b/c/three.txt"] { try await f.put(p(file), file) }
            let top = try await f.store.children(of: .root).map(\.path).sorted()
            #expect(top == [p("a"), p("d"), p("top.txt")])
            let all = try await f.store.descendants(of: .root)
            #expect(all.map(\.path).sorted() == ["a", "a/b", "a/b/c", "a/b/c/three.txt", "a/b/two.txt", "a/one.txt", "d", "top.txt"].map(p).sorted())
            #expect(all.first { $0.path == p("a/b/c/three.txt") }?.size == 15)
            let sub = try await f.store.descendants(of: p("a/b")).map(\.path).sorted()
            #expect(sub == [p("a/b/c"), p("a/b/c/three.txt"), p("a/b/two.txt")])
        }
    }

    @Test("a move never overwrites and is guarded by the source's version", arguments: StoreKind.available)
    func moves(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            let one = try await f.put(p("one.txt"), "1")
            // Another size: on nginx a version is made from time and size, and two files
            // written in one second with one size have the same one.
            try await f.put(p("two.txt"), "22")
            _ = try await f.store.makeFolder(at: p("dir"))
            await expectCode(.filenameCollision) { try await f.store.move(p("one.txt"), to: p("two.txt"), version: nil) }
            #expect(try await f.read(p("two.txt")) == "22")
            if kind.movesIntoMissingFolders {
                // nginx makes the missing folder (README, compatibility): what it does, undone.
                _ = try await f.store.move(p("one.txt"), to: p("nowhere/one.txt"), version: nil)
                _ = try await f.store.move(p("nowhere/one.txt"), to: p("one.txt"), version: one.etag)
                try await f.store.delete(p("nowhere"), version: nil)
            } else {
                await expectCode(.parentMissing) { try await f.store.move(p("one.txt"), to: p("nowhere/one.txt"), version: nil) }
            }
            await expectCode(.versionMismatch) {
                try await f.store.move(p("two.txt"), to: p("dir/two.txt"), version: one.etag)
            }
            let moved = try await f.store.move(p("one.txt"), to: p("dir/uno.txt"), version: one.etag)
            #expect(moved.path == p("dir/uno.txt"))
            if let id = one.fileID { #expect(moved.fileID == id) }
            #expect(try await f.read(p("dir/uno.txt")) == "1")
            await expectCode(.noSuchItem) { try await f.store.entry(at: p("one.txt")) }
            await expectCode(.noSuchItem) { try await f.store.move(p("one.txt"), to: p("x.txt"), version: nil) }
        }
    }

    @Test("a folder moves with its contents in one operation", arguments: StoreKind.available)
    func folderMove(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            _ = try await f.store.makeFolder(at: p("src"))
            _ = try await f.store.makeFolder(at: p("src/inner"))
            try await f.put(p("src/inner/f.txt"), "deep")
            _ = try await f.store.move(p("src"), to: p("dst"), version: nil)
            #expect(try await f.read(p("dst/inner/f.txt")) == "deep")
            #expect(try await f.store.children(of: .root).map(\.path) == [p("dst")])
        }
    }

    /// A bundle's new version starts as a server-side copy of the old one. nginx answers a
    /// COPY of a folder without a trailing slash with 400 and lighttpd redirects it: before
    /// the store resent it with folder URLs, every change to a bundle failed there.
    @Test("a folder copies with its whole tree where the store copies, and never over an existing name", arguments: StoreKind.available)
    func folderCopy(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            _ = try await f.store.makeFolder(at: p("Deck.key"))
            _ = try await f.store.makeFolder(at: p("Deck.key/Data"))
            try await f.put(p("Deck.key/Data/slide.bin"), "slide")
            try await f.put(p("Deck.key/Index.zip"), "index")
            guard try await f.store.copy(p("Deck.key"), to: p(".copy.key")) else {
                #expect(!kind.isWebDAV, "\(kind) does not copy")
                return
            }
            #expect(try await f.read(p(".copy.key/Data/slide.bin")) == "slide")
            #expect(try await f.read(p(".copy.key/Index.zip")) == "index")
            #expect(try await f.read(p("Deck.key/Data/slide.bin")) == "slide", "the copy's source changed")
            await expectCode(.filenameCollision) { try await f.store.copy(p("Deck.key"), to: p(".copy.key")) }
        }
    }

    @Test("deletes are guarded and recursive", arguments: StoreKind.available)
    func deletes(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            let old = try await f.put(p("f.txt"), "old")
            // Another size: WsgiDAV's ETag (inode, time in seconds, size) and nginx's made
            // version cannot tell two writes of one size within a second apart (README).
            let new = try await f.store.upload(from: f.localFile("newer"), to: p("f.txt"), condition: .mustMatch(old.etag!), progress: nil)
            await expectCode(.versionMismatch) { try await f.store.delete(p("f.txt"), version: old.etag) }
            #expect(try await f.read(p("f.txt")) == "newer")
            try await f.store.delete(p("f.txt"), version: new.etag)
            await expectCode(.noSuchItem) { try await f.store.delete(p("f.txt"), version: nil) }
            _ = try await f.store.makeFolder(at: p("tree"))
            _ = try await f.store.makeFolder(at: p("tree/sub"))
            try await f.put(p("tree/sub/x"), "x")
            try await f.store.delete(p("tree"), version: nil)
            #expect(try await f.store.descendants(of: .root).isEmpty)
        }
    }

    @Test("a symlink is stored as a symlink and never followed", arguments: StoreKind.available)
    func symlinks(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            guard kind.keepsDeadProperties else { return try await Self.symlinksRefused(f) }
            let link = try await f.store.makeSymlink(at: p("link"), target: "../outside/secret", condition: .mustNotExist)
            #expect(link.kind == .symlink && link.symlinkTarget == "../outside/secret")
            let listed = try await f.store.children(of: .root)
            #expect(listed.map(\.path) == [p("link")] && listed.first?.kind == .symlink)
            #expect(listed.first?.symlinkTarget == "../outside/secret")
            await expectCode(.filenameCollision) { try await f.store.makeSymlink(at: p("link"), target: "x", condition: .mustNotExist) }
        }
    }

    @Test("a symlink is replaced only from its current version", arguments: StoreKind.available)
    func symlinkReplace(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            guard kind.keepsDeadProperties else { return try await Self.symlinksRefused(f) }
            let first = try await f.store.makeSymlink(at: p("ln"), target: "a", condition: .mustNotExist)
            let second = try await f.store.makeSymlink(at: p("ln"), target: "b", condition: .mustMatch(first.etag!))
            #expect(second.symlinkTarget == "b")
            await expectCode(.versionMismatch) {
                try await f.store.makeSymlink(at: p("ln"), target: "c", condition: .mustMatch(first.etag!))
            }
            #expect(try await f.store.entry(at: p("ln")).symlinkTarget == "b")
            #expect(try await f.store.children(of: .root).count == 1)
        }
    }

    /// Not applicable to rclone and nginx: `rclone serve webdav` keeps no dead properties
    /// (PROPPATCH answers 403 for each), nginx has no PROPPATCH (405), so a symlink stored there could not be told from a small file
    /// holding its target. What the contract still asks: the store says so, creates nothing
    /// a listing shows, and leaves no temporary on the server's disk.
    static func symlinksRefused(_ f: StoreFixture) async throws {
        await expectCode(.cannotSynchronize) { try await f.store.makeSymlink(at: p("link"), target: "x", condition: .mustNotExist) }
        #expect(try await f.store.children(of: .root).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: f.diskPath).isEmpty, "left on the server's disk")
    }

    @Test("an upload cut short leaves the old version whole, and none is seen half-written", arguments: StoreKind.available)
    func cutUpload(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            let old = try await f.put(p("doc.bin"), "the old version")
            let size: Int64 = 32 << 20
            let source = f.scratch.appendingPathComponent("new.bin"), whole = f.scratch.appendingPathComponent("whole.bin")
            try LargeFileContractTests.writePattern(to: source, size: size)
            try LargeFileContractTests.writePattern(to: whole, size: size)
            // Halfway through, look at what the store's disk holds at the target, then change
            // the source: the upload notices at its end and cuts the request short.
            let halfway = Mutex<Data?>(nil)
            let onDisk = kind == .inMemory ? nil : f.diskPath + "/doc.bin"
            let progress: TransferProgress = { done, _ in
                guard done >= size / 2, halfway.withLock({ $0 == nil }) else { return }
                let seen = onDisk.flatMap { FileManager.default.contents(atPath: $0) } ?? Data("unread".utf8)
                halfway.withLock { $0 = seen }
                if let handle = try? FileHandle(forWritingTo: source) {
                    _ = try? handle.seekToEnd()
                    try? handle.write(contentsOf: Data("appended while uploading".utf8))
                    try? handle.close()
                }
            }
            // The source changed under the upload: it must be cut short (never published).
            do {
                _ = try await f.store.upload(from: source, to: p("doc.bin"), condition: .mustMatch(old.etag!), progress: progress)
                Issue.record("\(kind): the upload of a source changed while it was sent succeeded")
            } catch let error as ProviderError {
                #expect(error.code == .cannotSynchronize, "\(error)")
            }
            // Booleans, not the Data values: a failed #expect diffs its operands, which takes
            // forever for megabytes.
            let seen = halfway.withLock { $0 }
            #expect(seen != nil, "\(kind): the upload never reported reaching its half, so the source was never changed")
            let target = f.scratch.appendingPathComponent("after.bin")
            _ = try await f.store.download(p("doc.bin"), range: nil, version: nil, to: target, progress: nil)
            let after = try Data(contentsOf: target, options: .alwaysMapped)
            let isOld = after == Data("the old version".utf8)
            let isNew = try !isOld && LargeFileContractTests.filesEqual(target, whole)
            // WsgiDAV writes a PUT's body into the file itself: the probe finds that, and the
            // store uploads to a temporary name there (it failed both checks before).
            if let onDisk, let seen {
                let untouched = seen == Data("the old version".utf8)
                #expect(untouched, "halfway through the upload \(onDisk) held \(seen.count) bytes, not the old version")
            }
            #expect(isOld, "after the cut upload the file holds \(after.count) bytes: \(isNew ? "the new version, published although the upload was cut" : "neither version")")
            #expect(try await f.store.children(of: .root).map(\.path) == [p("doc.bin")])
        }
    }

    /// WsgiDAV cuts a MOVE's Destination at an encoded "?" (%3F): there the file is renamed
    /// by a copy (`WebDAVStore+Destinations.swift`; it landed at "a" before).
    @Test("moves to and from unusual names keep the bytes", arguments: StoreKind.available)
    func unusualMoves(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            try await f.put(p("plain"), "payload")
            _ = try await f.store.makeFolder(at: RemotePath(["dír #1 & %"]))
            let target = try RemotePath(["dír #1 & %", "a?b \"c\" 'd' é"])
            _ = try await f.store.move(p("plain"), to: target, version: nil)
            #expect(try await f.read(target) == "payload")
            #expect(try await f.store.descendants(of: .root).map(\.path).sorted() == [target.parent, target])
        }
    }

    @Test("files written below a folder named with \"?\" or \";\" land there, whatever the server does with a MOVE's destination",
          arguments: StoreKind.available)
    func uploadsBelowCutNames(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            for folder in ["what?", "semi;colon"] { _ = try await f.store.makeFolder(at: RemotePath([folder])) }
            let files = [p("what?/a.txt"), p("semi;colon/b;c.txt"), p("what?/d?e")]
            for file in files { try await f.put(file, "at \(file)") }
            // Replaced, guarded by its version: WsgiDAV's uploads go through a temporary name
            // and a MOVE unless the MOVE would land elsewhere (a file "what" before).
            let old = try await f.store.entry(at: files[0])
            _ = try await f.store.upload(from: f.localFile("v2"), to: files[0], condition: .mustMatch(old.etag!), progress: nil)
            let listed = try await f.store.descendants(of: .root).map(\.path).filter { !$0.name.hasPrefix(".") }.sorted()
            #expect(listed == (files + [p("what?"), p("semi;colon")]).sorted())
            #expect(try await f.read(files[0]) == "v2")
            #expect(try await f.read(files[1]) == "at semi;colon/b;c.txt")
        }
    }

    @Test("a folder renamed to a name with \"?\" is moved whole, or refused with why where a MOVE would land elsewhere",
          arguments: StoreKind.available)
    func folderToCutName(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            _ = try await f.store.makeFolder(at: p("plain"))
            try await f.put(p("plain/inside.txt"), "inside")
            do {
                _ = try await f.store.move(p("plain"), to: p("why?"), version: nil)
                #expect(kind != .wsgidav, "WsgiDAV moved a folder to a name with a \"?\"")
                #expect(try await f.read(p("why?/inside.txt")) == "inside")
            } catch {
                #expect(kind == .wsgidav, "\(error)")
                let refusal = error as? ProviderError
                #expect(refusal?.code == .cannotSynchronize && refusal?.message.contains("rename it without those characters") == true, "\(error)")
                #expect(try await f.read(p("plain/inside.txt")) == "inside")
                #expect(try await f.store.descendants(of: .root).map(\.path).filter { !$0.name.hasPrefix(".") }.sorted()
                    == [p("plain"), p("plain/inside.txt")])
            }
        }
    }

    @Test("a range of an old version is refused after the file shrank", arguments: StoreKind.available)
    func shrunkFile(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            let old = try await f.put(p("s"), String(repeating: "z", count: 100))
            _ = try await f.store.upload(from: f.localFile("tiny"), to: p("s"), condition: .mustMatch(old.etag!), progress: nil)
            let target = f.scratch.appendingPathComponent("part")
            await expectCode(.versionMismatch) {
                try await f.store.download(p("s"), range: ByteRange(offset: 50, length: 10), version: old.etag, to: target, progress: nil)
            }
        }
    }

    @Test("a listing of a missing folder fails instead of coming back empty", arguments: StoreKind.available)
    func missingFolderListing(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            await expectCode(.noSuchItem) { try await f.store.children(of: p("nowhere")) }
            try await f.put(p("file"), "x")
            await expectCode(.noSuchItem) { try await f.store.children(of: p("file")) }
        }
    }
}

