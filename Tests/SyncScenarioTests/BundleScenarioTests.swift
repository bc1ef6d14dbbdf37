import Foundation
import LocalStore
import Replica
import StateDatabase
@testable import SyncEngine
import Testing
import TestSupport
import WebDAV

#if canImport(Glibc)
import Glibc
#endif

/// Bundles (`Foo.app`): directories that sync as one item, against both stores, through the
/// real engine and replica.
@Suite("Bundle scenarios")
struct BundleScenarioTests {
    /// Writes a bundle of three levels below `root` (relative): `count` files spread over
    /// `Contents/`, `Contents/Resources/` and `Contents/Resources/Base.lproj/`, plus a symlink
    /// where the server can mark one (a bundle holding one is refused whole elsewhere:
    /// `symlinkRefused`).
    static func makeBundle(_ world: SyncWorld, _ root: String, files count: Int, tag: String = "v1") throws {
        let folders = ["Contents", "Contents/Resources", "Contents/Resources/Base.lproj"]
        for index in 0..<count {
            try world.write("\(root)/\(folders[index % 3])/member-\(index).txt", "\(tag) member \(index) " + String(repeating: "x", count: 200))
        }
        guard world.remote.storesSymlinks else { return }
        #expect(symlink("Resources/member-1.txt", world.local("\(root)/Contents/current")) == 0)
    }

    /// The bundle's members on the server's disk, by relative path (files: their text).
    static func serverManifest(_ world: SyncWorld, _ root: String) -> [String: SyncWorld.Node] {
        SyncWorld.tree(world.onServer(root)).filter { !$0.key.split(separator: "/").contains(".DAV") }
    }

    static func row(_ world: SyncWorld, _ path: String) throws -> ItemRecord? {
        Reconciler.paths(of: try world.database.allItems())[try RemotePath(string: path)]
    }

    @Test("a 3-level bundle of 1 000 members and a symlink uploads as one item; a changed member alone is re-sent",
          arguments: Remote.withOtherServers)
    func uploadAndModify(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try Self.makeBundle(world, "Big.app", files: 1000)
            try world.write("plain.txt", "not a bundle")
            let first = try await world.sync()
            #expect(first.count == 1 && first[0].steps == 2, "one step for the bundle, one for the file: \(first.map(\.steps))")
            try await world.expectAgreement()
            let record = try #require(try Self.row(world, "Big.app"))
            #expect(record.kind == .bundle)
            // 1 000 files, 3 folders and the symlink (where the server stores one).
            let members = remote.storesSymlinks ? 1004 : 1003
            #expect(record.remoteETag?.value.hasPrefix("bundle-\(members)-") == true, "version derived from \(members) members: \(String(describing: record.remoteETag))")
            #expect(try world.database.bundleMembers(of: record.id).count == members)
            #expect(try world.database.allItems().count == 3, "the root, the bundle and the file; no member rows")
            if remote.storesSymlinks {
                #expect(try await world.remoteTree()["Big.app/Contents/current"] == .symlink("Resources/member-1.txt"))
            }
            #expect(SyncWorld.tree(world.remoteDisk).keys.allSatisfy { !$0.hasPrefix(".tidesync-") }, "no scratch left on the server")

            try await world.accessLogSettled()
            let mark = world.accessLogLines().count
            try world.write("Big.app/Contents/Resources/member-4.txt", "changed member")
            let second = try await world.sync()
            #expect(second.count == 1 && second[0].steps == 1)
            try await world.expectAgreement()
            #expect(readFile(world.onServer("Big.app/Contents/Resources/member-4.txt")) == "changed member")
            if remote == .apache {
                try await world.accessLogSettled()
                let puts = world.requests("PUT", since: mark).filter { $0.contains("\" 20") }
                #expect(puts.count == 1, "only the changed member is sent: \(puts)")
                let bytes = puts.compactMap { line in line.split(separator: " ").dropLast(2).last.flatMap { Int($0) } }.reduce(0, +)
                #expect(bytes < 4096, "PUT bytes (with headers): \(bytes)")
                #expect(world.requests("COPY", since: mark).count == 1, "the old version copied on the server")
            }
            #expect(SyncWorld.tree(world.remoteDisk).keys.allSatisfy { !$0.hasPrefix(".tidesync-") }, "no scratch left on the server")
        }
    }

    @Test("renaming, moving and deleting a bundle are one operation each", arguments: Remote.withOtherServers)
    func renameMoveDelete(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try Self.makeBundle(world, "Doc.pages", files: 30)
            try FileManager.default.createDirectory(atPath: world.local("archive"), withIntermediateDirectories: true)
            try await world.sync()
            let id = try #require(try Self.row(world, "Doc.pages")).id

            var mark = world.accessLogLines().count
            #expect(rename(world.local("Doc.pages"), world.local("Report.pages")) == 0)
            let renamed = try await world.sync()
            #expect(renamed.first?.steps == 1)
            #expect(try Self.row(world, "Report.pages")?.id == id, "the bundle keeps its identity")
            if remote == .apache {
                #expect(world.requests("MOVE", since: mark).count == 1)
                #expect(world.requests("PUT", since: mark).isEmpty && world.requests("MKCOL", since: mark).isEmpty)
            }
            mark = world.accessLogLines().count
            #expect(rename(world.local("Report.pages"), world.local("archive/Report.pages")) == 0)
            try await world.sync()
            #expect(try Self.row(world, "archive/Report.pages")?.id == id)
            if remote == .apache {
                #expect(world.requests("MOVE", since: mark).count == 1)
                #expect(world.requests("PUT", since: mark).isEmpty)
            }
            try await world.expectAgreement()

            mark = world.accessLogLines().count
            try FileManager.default.removeItem(atPath: world.local("archive/Report.pages"))
            let deleted = try await world.sync()
            #expect(deleted.first?.steps == 1)
            #expect(!FileManager.default.fileExists(atPath: world.onServer("archive/Report.pages")))
            if remote == .apache {
                // Set aside in one MOVE (nobody sees it half-deleted), checked, renamed to
                // its doomed name (a DELETE cut short leaves nothing to put back), deleted.
                #expect(world.requests("DELETE", since: mark).count == 1)
                #expect(world.requests("MOVE", since: mark).count == 2)
            }
            try await world.expectAgreement()
        }
    }

    @Test("a bundle changed on the server by another client replaces the local one whole", arguments: Remote.withOtherServers)
    func remoteChangeInside(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try Self.makeBundle(world, "Deck.key", files: 12)
            try await world.sync()
            let before = try #require(world.localInode("Deck.key"))
            try world.writeOnServer("Deck.key/Contents/member-0.txt", "edited elsewhere")
            try world.writeOnServer("Deck.key/Contents/Resources/added.txt", "added elsewhere")
            try world.removeOnServer("Deck.key/Contents/member-3.txt")
            let passes = try await world.sync()
            #expect(passes.first?.steps == 1, "one download of the bundle")
            #expect(readFile(world.local("Deck.key/Contents/member-0.txt")) == "edited elsewhere")
            #expect(readFile(world.local("Deck.key/Contents/Resources/added.txt")) == "added elsewhere")
            #expect(!FileManager.default.fileExists(atPath: world.local("Deck.key/Contents/member-3.txt")))
            #expect(world.localInode("Deck.key") != before, "replaced by one rename, not edited in place")
            #expect(SyncWorld.tree(world.localRoot).keys.allSatisfy { !$0.hasPrefix(".tidesync-") }, "no temporary left locally")
            try await world.expectAgreement()
        }
    }

    @Test("a bundle edited on both sides: one whole-bundle conflict copy", arguments: Remote.withOtherServers)
    func conflict(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try Self.makeBundle(world, "Notes.rtfd", files: 6)
            try await world.sync()
            try world.write("Notes.rtfd/Contents/member-0.txt", "mine, longer than before")
            try world.writeOnServer("Notes.rtfd/Contents/Resources/member-1.txt", "theirs")
            try await world.sync()
            let names = try FileManager.default.contentsOfDirectory(atPath: world.localRoot).filter { $0.hasPrefix("Notes") }
            #expect(names.count == 2, "the bundle and one copy: \(names)")
            let copy = try #require(names.first { $0 != "Notes.rtfd" })
            #expect(copy.hasPrefix("Notes (conflicted copy ") && copy.hasSuffix(" testhost).rtfd"), "\(copy)")
            // The copy holds this machine's version whole; the original the server's, whole.
            #expect(readFile(world.local("\(copy)/Contents/member-0.txt")) == "mine, longer than before")
            #expect(readFile(world.local("\(copy)/Contents/Resources/member-1.txt"))?.hasPrefix("v1 member 1") == true)
            #expect(readFile(world.local("Notes.rtfd/Contents/Resources/member-1.txt")) == "theirs")
            #expect(readFile(world.local("Notes.rtfd/Contents/member-0.txt"))?.hasPrefix("v1 member 0") == true)
            #expect(try Self.row(world, copy)?.kind == .bundle)
            #expect(try world.database.conflicts().count == 1)
            try await world.expectAgreement()
        }
    }

    @Test("a bundle made on both sides with the same members and bytes is no conflict", arguments: Remote.withOtherServers)
    func sameOnBothSides(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            for name in ["a.txt", "sub/b.txt"] {
                try world.write("Same.bundle/\(name)", "same \(name)")
                try world.writeOnServer("Same.bundle/\(name)", "same \(name)")
            }
            try await world.sync()
            let names = try FileManager.default.contentsOfDirectory(atPath: world.localRoot)
            #expect(names == ["Same.bundle"], "\(names)")
            #expect(try Self.row(world, "Same.bundle")?.kind == .bundle)
            try await world.expectAgreement()
        }
    }

    /// Not on nginx: its listings leave out the name set aside (it begins with "."), so
    /// there the bundle is taken as deleted and comes back with the new version (README).
    @Test("a bundle caught between the two moves of another client's replacement is not taken as deleted",
          arguments: Remote.withOtherServers.filter { $0 != .nginx })
    func betweenTwoMoves(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try Self.makeBundle(world, "docs/Swap.app", files: 6)
            try Self.makeBundle(world, "docs/Gone.app", files: 3)
            try world.write("docs/other.txt", "other")
            try await world.sync()
            let before = try #require(try Self.row(world, "docs/Swap.app"))
            // Another client set the old version aside and has not moved its new one in yet;
            // a third deleted Gone.app meanwhile.
            let aside = "docs/.tidesync-bundle-0C1A1D2B-old"
            try world.moveOnServer("docs/Swap.app", to: aside)
            try world.removeOnServer("docs/Gone.app")
            for walk in 1...3 {
                try await world.sync()
                #expect(FileManager.default.fileExists(atPath: world.local("docs/Swap.app/Contents/member-0.txt")),
                        "walk \(walk): the local bundle was deleted while the server's was between two moves")
                #expect(try Self.row(world, "docs/Swap.app")?.remoteETag == before.remoteETag)
            }
            // Still missing a minute later (the first miss backdated): the other client
            // crashed in the middle. (Any bundle missing from that folder waited too: the
            // name set aside does not say which bundle it belongs to.)
            world.pass.runner.provider.swapWaits.withLock { waits in
                for key in waits.keys { waits[key] = Date(timeIntervalSinceNow: -SyncProvider.swapWait - 1) }
            }
            try await world.sync()
            #expect(!FileManager.default.fileExists(atPath: world.local("docs/Swap.app")))
            #expect(!FileManager.default.fileExists(atPath: world.local("docs/Gone.app")))
            // Its restart puts the old version back, which comes back here.
            try world.moveOnServer(aside, to: "docs/Swap.app")
            try await world.sync()
            #expect(FileManager.default.fileExists(atPath: world.local("docs/Swap.app/Contents/member-0.txt")))
            // Set aside again and then deleted (nothing set aside any more): deleted here at once.
            try world.moveOnServer("docs/Swap.app", to: aside)
            try await world.sync()
            #expect(FileManager.default.fileExists(atPath: world.local("docs/Swap.app")))
            try world.removeOnServer(aside)
            try await world.sync()
            #expect(!FileManager.default.fileExists(atPath: world.local("docs/Swap.app")))
            #expect(try Self.row(world, "docs/Swap.app") == nil)
            #expect(world.serverText("docs/other.txt") == "other")
            try await world.expectAgreement()
        }
    }

    @Test("while a 200-member bundle is replaced, every listing of it is the whole old or the whole new version",
          arguments: Remote.withOtherServers)
    func atomicReplacement(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try Self.makeBundle(world, "Atom.app", files: 200)
            try await world.sync()
            let old = Self.serverManifest(world, "Atom.app")
            for index in stride(from: 0, to: 200, by: 2) {
                try world.write("Atom.app/\(["Contents", "Contents/Resources", "Contents/Resources/Base.lproj"][index % 3])/member-\(index).txt", "v2 \(index)")
            }
            try world.write("Atom.app/Contents/new.txt", "new member")
            try FileManager.default.removeItem(atPath: world.local("Atom.app/Contents/member-3.txt"))
            // A second reader lists the bundle as fast as it can while the pass runs.
            let reader = BundleReader(remote: remote, disk: world.onServer("Atom.app"), store: world.store)
            let listing = Task { await reader.run() }
            try await world.sync()
            try await Task.sleep(for: .milliseconds(200))  // a few listings of the new version
            reader.stop()
            let seen = await listing.value
            let new = Self.serverManifest(world, "Atom.app")
            #expect(Self.names(new) != Self.names(old), "the bundle changed")
            #expect(new["Contents/new.txt"] == .file("new member"))
            var olds = 0, news = 0, absent = 0
            for snapshot in seen {
                switch snapshot {
                case nil: absent += 1
                case let tree? where tree == Self.names(old): olds += 1
                case let tree? where tree == Self.names(new): news += 1
                case let tree?:
                    let extra = tree.subtracting(Self.names(old)).subtracting(Self.names(new)).sorted().prefix(5)
                    Issue.record("a listing that is neither version: \(tree.count) members, e.g. \(extra)")
                }
            }
            #expect(olds + news > 5, "the reader saw few listings: old \(olds), new \(news), absent \(absent)")
            if remote == .localDirectory {
                // The local store swaps the two versions in one RENAME_EXCHANGE: never absent.
                #expect(absent == 0, "the bundle was missing from \(absent) listings")
            }
            print("atomic replacement (\(remote)): \(seen.count) listings: \(olds) old, \(news) new, \(absent) absent")
        }
    }

    @Test("with the watcher: a bundle replaced by a download stays watched, down to its inner folders",
          arguments: Remote.withOtherServers)
    func watchedAfterDownload(_ remote: Remote) async throws {
        try await withLiveWorld(remote, poll: .seconds(1)) { world, run in
            try world.write("Deck.key/Index.xml", "v1")
            try world.write("Deck.key/Data/a.txt", "a1")
            try await eventually("the bundle uploaded") { world.serverText("Deck.key/Data/a.txt") == "a1" }
            try await run.quiesce()
            // Another client's version arrives: put in place with one RENAME_EXCHANGE.
            try await Task.sleep(for: .milliseconds(1100))  // past Apache's weak-ETag second
            try world.writeOnServer("Deck.key/Data/a.txt", "a2 from the server")
            try await eventually("the new version here") { readFile(world.local("Deck.key/Data/a.txt")) == "a2 from the server" }
            try await run.quiesce()
            // Edits inside the new tree, at its top and in a folder inside, reach the server.
            try world.write("Deck.key/Data/a.txt", "a3 edited here")
            try world.write("Deck.key/Index.xml", "v3 edited here")
            try await eventually("the local edits on the server") {
                world.serverText("Deck.key/Data/a.txt") == "a3 edited here" && world.serverText("Deck.key/Index.xml") == "v3 edited here"
            }
            try await run.quiesce()
            try await world.expectAgreement()
        }
    }

    @Test("with the watcher: a burst of edits inside a bundle settles as one upload of the bundle", arguments: Remote.withOtherServers)
    func watchedBundle(_ remote: Remote) async throws {
        try await withLiveWorld(remote) { world, run in
            try Self.makeBundle(world, "Live.app", files: 30)
            let state = {
                (try? Self.row(world, "Live.app")?.kind, try? world.database.pendingOperations(),
                 readFile(world.onServer("Live.app/Contents/member-0.txt"))?.prefix(12))
            }
            // As long as the upload makes progress (members arrive on a server the whole
            // suite keeps busy), it is waited for; 60 s without progress is a failure.
            var lastProgress = ContinuousClock.now, members = -1
            let uploaded = try await waitUntil(timeout: .seconds(600)) {
                let (kind, journal, member) = state()
                let now = SyncWorld.tree(world.onServer("")).count  // the scratch collection included
                if now != members { (members, lastProgress) = (now, .now) }
                return (kind == .bundle && journal?.isEmpty == true && member?.hasPrefix("v1") == true)
                    || ContinuousClock.now - lastProgress > .seconds(60)
            } && state().0 == .bundle && state().1?.isEmpty == true
            guard uploaded else {
                let (kind, journal, member) = state()
                Issue.record("the bundle was not uploaded: row kind \(String(describing: kind)), journal \(String(describing: journal)), member-0 on the server \(String(describing: member)), queue \(run.live.queue.waiting), members here \(SyncWorld.tree(world.local("Live.app")).count), on the server \(Self.serverManifest(world, "Live.app").count)")
                return
            }
            try await run.quiesce()
            let version = try #require(try Self.row(world, "Live.app")?.remoteETag)
            try await world.accessLogSettled()
            let mark = world.accessLogLines().count
            // An app saving a document package: several members written in quick succession,
            // one renamed over another, a new folder with a file. When each write ended is
            // noted: a stalled machine can stretch a gap past the quiet period.
            var ends: [ContinuousClock.Instant] = []
            for index in 0..<5 {
                try world.write("Live.app/Contents/member-\(index * 3).txt", "v2 \(index)")
                ends.append(.now)
                try await Task.sleep(for: .milliseconds(60))
            }
            try world.write("Live.app/Contents/tmp-save", "atomically saved")
            #expect(rename(world.local("Live.app/Contents/tmp-save"), world.local("Live.app/Contents/member-3.txt")) == 0)
            ends.append(.now)
            try world.write("Live.app/Contents/New/inside.txt", "new folder")
            ends.append(.now)
            try await eventually("the edits on the server") {
                world.serverText("Live.app/Contents/New/inside.txt") == "new folder"
                    && world.serverText("Live.app/Contents/member-3.txt") == "atomically saved"
            }
            try await run.quiesce()
            #expect(try Self.row(world, "Live.app")?.remoteETag != version)
            #expect(try world.database.allItems().count == 2, "no rows for members")
            if remote == .apache {
                // Each new version is built from a COPY of the last: one for the burst. A gap in
                // which a loaded machine let the bundle settle (the quiet period is 300 ms;
                // counted from half of it, as the watcher thread stamps the events and may be
                // held up on its own) adds a version, and a second when a later write overtakes
                // that version's upload and it is sent again. Only changed members are sent.
                let splits = zip(ends, ends.dropFirst()).filter { $1 - $0 > .milliseconds(150) }.count
                try await world.accessLogSettled()
                let copies = world.requests("COPY", since: mark).count
                let puts = world.requests("PUT", since: mark).filter { $0.contains("\" 20") }.count
                #expect(copies >= 1 && copies <= 1 + 2 * splits, "\(copies) versions, \(splits) gap(s) longer than half the quiet period")
                #expect(puts >= 6 && puts <= 5 + copies, "\(puts) members sent for the 6 changed or new ones")
                #expect(world.requests("PUT", since: mark).allSatisfy { !$0.contains("tmp-save") })
            }
            try await world.expectAgreement()
        }
    }

    @Test("a bundle edited on two clients: one whole-bundle conflict copy, on both clients", arguments: Remote.withOtherServers)
    func twoClients(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            let other = try world.otherClient()
            func syncOther() async throws { for _ in 0..<4 { if try await other.pass.run().steps == 0 { return } } }
            try Self.makeBundle(world, "Shared.numbers", files: 9)
            try await world.sync()
            try await syncOther()
            #expect(SyncWorld.tree(other.localRoot) == SyncWorld.tree(world.localRoot))
            // Both edit the bundle; the other client syncs first and wins the name.
            try writeFile(other.localRoot + "/Shared.numbers/Contents/member-0.txt", "edited on otherhost")
            try world.write("Shared.numbers/Contents/Resources/member-1.txt", "edited on testhost")
            try await syncOther()
            try await world.sync()
            try await syncOther()
            let names = try FileManager.default.contentsOfDirectory(atPath: world.localRoot).sorted()
            #expect(names.count == 2, "\(names)")
            let copy = try #require(names.first { $0.contains("conflicted copy") })
            #expect(copy.hasSuffix(" testhost).numbers"))
            // Each version whole under one name, never members of both in one bundle.
            #expect(readFile(world.local("Shared.numbers/Contents/member-0.txt")) == "edited on otherhost")
            #expect(readFile(world.local("Shared.numbers/Contents/Resources/member-1.txt"))?.hasPrefix("v1") == true)
            #expect(readFile(world.local("\(copy)/Contents/Resources/member-1.txt")) == "edited on testhost")
            #expect(readFile(world.local("\(copy)/Contents/member-0.txt"))?.hasPrefix("v1") == true)
            #expect(SyncWorld.tree(other.localRoot) == SyncWorld.tree(world.localRoot), "both clients hold both versions")
            try await world.expectAgreement()
        }
    }

    @Test("turning bundle_extensions on for folders already synced makes them bundles without a conflict", arguments: Remote.withOtherServers)
    func ruleChange(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            world.use(bundles: .none)
            try Self.makeBundle(world, "Old.app", files: 6)
            try await world.sync()
            #expect(try Self.row(world, "Old.app")?.kind == .folder)
            world.use(bundles: .standard)
            try await world.sync()
            #expect(try Self.row(world, "Old.app")?.kind == .bundle)
            #expect(try FileManager.default.contentsOfDirectory(atPath: world.localRoot) == ["Old.app"])
            #expect(try world.database.conflicts().isEmpty)
            try await world.expectAgreement()
            world.use(bundles: .none)
            try await world.sync()
            #expect(try Self.row(world, "Old.app")?.kind == .folder)
            #expect(try world.database.conflicts().isEmpty)
            try await world.expectAgreement()
        }
    }

    @Test("an empty bundle, then edited: synced like any other", arguments: Remote.withOtherServers)
    func emptyBundle(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try FileManager.default.createDirectory(atPath: world.local("Empty.app"), withIntermediateDirectories: true)
            try await world.sync()
            #expect(try Self.row(world, "Empty.app")?.kind == .bundle)
            try world.write("Empty.app/Contents/first.txt", "first")
            try await world.sync()
            #expect(readFile(world.onServer("Empty.app/Contents/first.txt")) == "first")
            try await world.expectAgreement()
        }
    }

    @Test("names the exclude patterns cover are members of a bundle, both ways", arguments: Remote.withOtherServers)
    func excludedNamesInside(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.write("Doc.pages/Data/page.xml", "page")
            try world.write("Doc.pages/Data/image.part", "a member called .part")
            try await world.sync()
            #expect(readFile(world.onServer("Doc.pages/Data/image.part")) == "a member called .part")
            try world.writeOnServer("Doc.pages/Data/~$lock", "theirs")
            try await world.sync()
            #expect(readFile(world.local("Doc.pages/Data/~$lock")) == "theirs")
            try world.write("Doc.pages/Data/page.xml", "page v2")
            try await world.sync()
            #expect(readFile(world.onServer("Doc.pages/Data/~$lock")) == "theirs")
            #expect(readFile(world.onServer("Doc.pages/Data/image.part")) == "a member called .part")
            try await world.expectAgreement()
        }
    }

    @Test("a bundle with a member still open for writing is not uploaded half-written", arguments: Remote.withOtherServers)
    func openMember(_ remote: Remote) async throws {
        try await withLiveWorld(remote) { world, run in
            try world.write("Movie.bundle/Info.txt", "info")
            try await eventually("the bundle uploaded") { world.serverText("Movie.bundle/Info.txt") == "info" }
            try await run.quiesce()
            let fd = open(world.local("Movie.bundle/render.out"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            #expect(fd >= 0)
            let first = Array("frame 1\n".utf8)
            #expect(write(fd, first, first.count) == first.count)
            try await Task.sleep(for: .milliseconds(1500))  // five quiet periods
            #expect(world.serverText("Movie.bundle/render.out") == nil, "a new version went up while a member was being written")
            let rest = Array("frame 2\n".utf8)
            #expect(write(fd, rest, rest.count) == rest.count)
            close(fd)
            try await eventually("the whole bundle uploaded") { world.serverText("Movie.bundle/render.out") == "frame 1\nframe 2\n" }
            try await run.quiesce()
            try await world.expectAgreement()
        }
    }

    static func names(_ manifest: [String: SyncWorld.Node]) -> Set<String> {
        Set(manifest.map { "\($0.key)=\($0.value)" })
    }
}

/// Lists a remote bundle again and again from its own connection (Apache: PROPFIND Depth
/// infinity; local store: a walk of its directory), recording what each listing held (nil:
/// not there). Contents are compared by size and name for WebDAV, by bytes on disk otherwise.
final class BundleReader: @unchecked Sendable {
    let remote: Remote
    let disk: String
    let store: any RemoteStore
    private let flag = NSLock()
    private var stopped = false

    init(remote: Remote, disk: String, store: any RemoteStore) {
        self.remote = remote
        self.disk = disk
        self.store = store
    }

    func stop() { flag.withLock { stopped = true } }

    func inode() -> UInt64? {
        var st = stat()
        return lstat(disk, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR ? UInt64(st.st_ino) : nil
    }
    var isStopped: Bool { flag.withLock { stopped } }

    func run() async -> [Set<String>?] {
        var seen: [Set<String>?] = []
        while !isStopped {
            // The server's disk is what Apache would answer from; a walk of it is the
            // strictest reader (it sees every intermediate state of a non-atomic swap).
            if let before = inode() {
                let tree = SyncWorld.tree(disk).filter { !$0.key.split(separator: "/").contains(".DAV") }
                // A walk during which the name moved to another folder read two folders:
                // only walks of one folder (the same inode before and after) count.
                if inode() == before { seen.append(BundleScenarioTests.names(tree)) }
            } else {
                seen.append(nil)
            }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return seen
    }
}
