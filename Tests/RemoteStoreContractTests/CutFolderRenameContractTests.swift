import Foundation
import Synchronization
import SyncEngine
import Testing
import TestSupport
@testable import WebDAV

/// A folder renamed (`moveFolder`) to a name a server cuts in a MOVE's `Destination`
/// (WsgiDAV: at a "?"): there its tree is copied and the source deleted behind the copies
/// (`WebDAVStore+FolderRename.swift`); elsewhere it is one MOVE. Either way the folder is
/// whole at its new name and gone from its old one. A `move` (one step, as for a bundle)
/// is refused there with why.
@Suite("RemoteStore contract: folders renamed to names a server cuts")
struct CutFolderRenameContractTests {
    static let tree = ["plain/inside.txt": "inside", "plain/b.txt": "bee", "plain/sub/deep.txt": "deep", "plain/sub/more/x.txt": "x"]

    static func makeTree(_ f: StoreFixture) async throws {
        for folder in ["plain", "plain/sub", "plain/sub/more"] { _ = try await f.store.makeFolder(at: RemotePath(string: folder)) }
        for (file, text) in tree { try await f.put(RemotePath(string: file), text) }
    }

    static func listed(_ f: StoreFixture) async throws -> [String] {
        try await f.store.descendants(of: .root).map(\.path).filter { !$0.name.hasPrefix(".") }.map(\.description).sorted()
    }

    @Test("a folder renamed to a name with \"?\" is moved whole, its subfolders and files with it", arguments: StoreKind.available)
    func folderToCutName(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            try await Self.makeTree(f)
            if kind == .wsgidav {
                await expectCode(.cannotSynchronize) { try await f.store.move(p("plain"), to: p("why?"), version: nil) }
                #expect(try await Self.listed(f).allSatisfy { $0.hasPrefix("plain") }, "a refused move wrote something")
            }
            let moved = try await f.store.moveFolder(p("plain"), to: p("why?"), version: nil)
            #expect(moved.path == p("why?") && moved.kind == .folder)
            for (file, text) in Self.tree {
                #expect(try await f.read(RemotePath(string: file.replacingOccurrences(of: "plain/", with: "why?/"))) == text, "\(file)")
            }
            #expect(try await Self.listed(f) == ["why?", "why?/b.txt", "why?/inside.txt", "why?/sub", "why?/sub/deep.txt",
                                                 "why?/sub/more", "why?/sub/more/x.txt"])
            // Moved into a folder whose name has a "?": the same, one level down.
            _ = try await f.store.makeFolder(at: p("other"))
            try await f.put(p("other/o.txt"), "o")
            _ = try await f.store.moveFolder(p("other"), to: p("why?/sub/other"), version: nil)
            #expect(try await f.read(p("why?/sub/other/o.txt")) == "o")
            #expect(try await !Self.listed(f).contains("other"))
        }
    }

    @Test("a folder renamed to a name with \"?\": a file changed (or added) on the server meanwhile stays at its old place, beside its copy",
          arguments: StoreKind.available.filter { $0 == .wsgidav })
    func changedMeanwhile(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            try await Self.makeTree(f)
            let store = try #require(f.store as? WebDAVStore)
            let other = try f.otherClient()
            let changed = try f.localFile("changed on the server")
            let wrote = Mutex<Error?>(nil)
            // Another client's write between the copies and the deletes (the copy holds the old bytes).
            store.treeCopied.withLock { hook in
                hook = { _ in
                    do {
                        let old = try await other.entry(at: p("plain/sub/deep.txt"))
                        _ = try await other.upload(from: changed, to: p("plain/sub/deep.txt"), condition: .mustMatch(old.etag!), progress: nil)
                        _ = try await other.upload(from: changed, to: p("plain/added.txt"), condition: .mustNotExist, progress: nil)
                    } catch { wrote.withLock { $0 = error } }
                }
            }
            var failure: Error?
            do { _ = try await f.store.moveFolder(p("plain"), to: p("why?"), version: nil) } catch { failure = error }
            await f.close(client: other)
            #expect(failure == nil && wrote.withLock { $0 } == nil, "\(String(describing: failure)) \(String(describing: wrote.withLock { $0 }))")
            #expect(try await f.read(p("why?/sub/deep.txt")) == "deep")
            #expect(try await f.read(p("plain/sub/deep.txt")) == "changed on the server")
            #expect(try await f.read(p("plain/added.txt")) == "changed on the server")
            #expect(try await Self.listed(f) == ["plain", "plain/added.txt", "plain/sub", "plain/sub/deep.txt", "why?", "why?/b.txt", "why?/inside.txt",
                                                 "why?/sub", "why?/sub/deep.txt", "why?/sub/more", "why?/sub/more/x.txt"])
        }
    }

    @Test("a folder holding a symlink is not renamed to a name with \"?\" where a MOVE would land elsewhere; nothing is written",
          arguments: StoreKind.available.filter { $0 == .wsgidav })
    func symlinkInside(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            try await Self.makeTree(f)
            _ = try await f.store.makeSymlink(at: p("plain/link"), target: "inside.txt", condition: .mustNotExist)
            await expectCode(.cannotSynchronize) { try await f.store.moveFolder(p("plain"), to: p("why?"), version: nil) }
            #expect(try await Self.listed(f) == ["plain", "plain/b.txt", "plain/inside.txt", "plain/link", "plain/sub",
                                                 "plain/sub/deep.txt", "plain/sub/more", "plain/sub/more/x.txt"])
        }
    }
}
