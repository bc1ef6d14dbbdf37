import Foundation
import LocalStore
@testable import SyncEngine
import StateDatabase
import Testing
import TestSupport

/// A DELETE of a folder that the server carries out only in part: rclone removed one
/// member of a bundle's old version set aside, then answered 405, when another client
/// moved the folder meanwhile (two-client test, rclone seed 1207 beside CPU hogs); the
/// clean-up then put the half-deleted version back in place — a bundle with 2 of its 3
/// members, published, and the user's delete undone. A checked old version is renamed to
/// its doomed name before the DELETE, and what is under that name is only ever deleted.
@Suite("A folder DELETE the server carries out in part")
struct PartialDeleteTests {
    /// The first DELETE of one of our scratch folders that exists removes the files `removing` picks
    /// inside it, optionally moves `dir` to `moved` (another client's move), then fails as
    /// rclone answered (405).
    final class PartialDeleteStore: ForwardingStore, @unchecked Sendable {
        let disk: String, movesFolder: Bool
        let removing: @Sendable (String) -> Bool
        private var failed = false

        init(_ inner: any RemoteStore, disk: String, movesFolder: Bool, removing: @escaping @Sendable (String) -> Bool) {
            self.disk = disk
            self.movesFolder = movesFolder
            self.removing = removing
            super.init(inner)
        }

        override func delete(_ path: RemotePath, version: ETag?) async throws(ProviderError) {
            let root = disk + "/" + path.description
            guard !failed, path.name.hasPrefix(BundleManifest.scratchPrefix + "bundle-"), FileManager.default.fileExists(atPath: root) else {
                return try await inner.delete(path, version: version)
            }
            failed = true
            let files = (FileManager.default.enumerator(atPath: root)?.allObjects as? [String]) ?? []
            for file in files where removing(file) { try? FileManager.default.removeItem(atPath: root + "/" + file) }
            if movesFolder { _ = try await inner.move(try RemotePath(["dir"]), to: try RemotePath(["moved"]), version: nil) }
            throw ProviderError(.cannotSynchronize, "the server answered DELETE \(path) unexpectedly (HTTP 405 Method Not Allowed)")
        }
    }

    /// A remote on disk with `dir/A.app` (three members) and `dir/keep.txt`, a provider on
    /// it through a `PartialDeleteStore`, and the state database's scratch folder.
    func world(movesFolder: Bool) throws -> (disk: String, provider: SyncProvider, database: StateDatabase, scratch: String) {
        let scratch = temporaryPath("tidesync-partial-")
        let disk = scratch + "/remote"
        for member in ["Index.xml", "Data/a.txt", "Data/b.txt"] { try writeFile(disk + "/dir/A.app/" + member, "old " + member) }
        try writeFile(disk + "/dir/keep.txt", "keep")
        let store = PartialDeleteStore(LocalDirectoryStore(root: disk), disk: disk, movesFolder: movesFolder) { $0 == "Data/a.txt" }
        let database = try StateDatabase(path: scratch + "/state.sqlite")
        return (disk, SyncProvider(store: store, state: database), database, scratch)
    }

    /// Runs `step`, which the partial DELETE must make fail, then the clean-up the next
    /// pass does with the journal entry the failed step left: it keeps nothing as a
    /// conflict copy.
    func failThenCleanUp(_ provider: SyncProvider, beside target: RemotePath, base: ETag?,
                         _ step: () async throws -> Void) async throws {
        await #expect(throws: ProviderError.self) { try await step() }
        let kept = try await provider.cleanUpScratch(beside: target, token: "T", base: base, host: "here")
        #expect(kept.isEmpty, "kept: \(kept)")
    }

    func names(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? ["(no folder)"]).sorted()
    }

    @Test("a deleted bundle's half-deleted old version is never put back", arguments: [false, true])
    func bundleDelete(movesFolder: Bool) async throws {
        let (disk, provider, database, scratch) = try world(movesFolder: movesFolder)
        defer { try? database.close(); removeTree(scratch) }
        let bundle = try RemotePath(string: "dir/A.app")
        let version = try #require(try await provider.bundleListing(at: bundle).entry.etag)
        try await failThenCleanUp(provider, beside: bundle, base: version) {
            try await provider.deleteBundle(bundle, version: version, scratchToken: "T")
        }
        #expect(names(disk + (movesFolder ? "/moved" : "/dir")) == ["keep.txt"])
    }

    @Test("a deleted folder's half-deleted contents are never put back", arguments: [false, true])
    func folderDelete(movesFolder: Bool) async throws {
        let (disk, provider, database, scratch) = try world(movesFolder: movesFolder)
        defer { try? database.close(); removeTree(scratch) }
        var folder: ItemRecord?
        for (path, kind) in [("dir", ItemKind.folder), ("dir/A.app", .folder), ("dir/A.app/Index.xml", .file),
                             ("dir/A.app/Data", .folder), ("dir/A.app/Data/a.txt", .file), ("dir/A.app/Data/b.txt", .file)] {
            let at = try RemotePath(string: path)
            let record = try provider.record(at: at, item: nil, kind: kind, remote: try await provider.store.entry(at: at),
                                             local: nil, operation: nil)
            if path == "dir/A.app" { folder = record }
        }
        let path = try RemotePath(string: "dir/A.app")
        try await failThenCleanUp(provider, beside: path, base: nil) {
            try await provider.deleteFolder(path, of: try #require(folder), scratchToken: "T")
        }
        #expect(names(disk + (movesFolder ? "/moved" : "/dir")) == ["keep.txt"])
    }

    @Test("a replaced bundle's half-deleted old version is not kept as a conflict copy", arguments: [false, true])
    func bundleReplace(movesFolder: Bool) async throws {
        let (disk, provider, database, scratch) = try world(movesFolder: movesFolder)
        defer { try? database.close(); removeTree(scratch) }
        let bundle = try RemotePath(string: "dir/A.app")
        let base = try #require(try await provider.bundleListing(at: bundle).entry.etag)
        for member in ["Index.xml", "Data/a.txt", "Data/b.txt"] {
            try writeFile(disk + "/dir/.tidesync-bundle-T/" + member, "new " + member)
        }
        try await failThenCleanUp(provider, beside: bundle, base: base) {
            try await provider.swapIn(try BundleScratch(beside: bundle, token: "T"), at: bundle, base: base)
        }
        let folder = disk + (movesFolder ? "/moved" : "/dir")
        #expect(names(folder) == ["A.app", "keep.txt"])
        for member in ["Index.xml", "Data/a.txt", "Data/b.txt"] {
            #expect(readFile(folder + "/A.app/" + member) == "new " + member)
        }
    }
}

/// The clean-up's own delete, and a set-aside MOVE whose answer was lost.
@Suite("Old versions deleted by the clean-up, and a set-aside whose answer was lost")
struct CleanUpDeleteTests {
    @Test("an old version the clean-up deletes, cut short, is not kept as a conflict copy")
    func cleanUpDeleteCutShort() async throws {
        let scratch = temporaryPath("tidesync-partial-")
        defer { removeTree(scratch) }
        let disk = scratch + "/remote"
        // As a crash left it: the new version in place, the old one (the base) set aside.
        for member in ["Index.xml", "Data/a.txt", "Data/b.txt"] {
            try writeFile(disk + "/dir/A.app/" + member, "new " + member)
            try writeFile(disk + "/dir/.tidesync-bundle-T-old/" + member, "old " + member)
        }
        let store = PartialDeleteTests.PartialDeleteStore(LocalDirectoryStore(root: disk), disk: disk, movesFolder: false) { $0 == "Data/a.txt" }
        let database = try StateDatabase(path: scratch + "/state.sqlite")
        defer { try? database.close() }
        let provider = SyncProvider(store: store, state: database)
        let bundle = try RemotePath(string: "dir/A.app")
        let aside = try BundleScratch(beside: bundle, token: "T").aside
        let base = try #require(try await provider.bundleListing(at: aside).entry.etag)
        await #expect(throws: ProviderError.self) {
            try await provider.cleanUpScratch(beside: bundle, token: "T", base: base, host: "here")
        }
        let kept = try await provider.cleanUpScratch(beside: bundle, token: "T", base: base, host: "here")
        #expect(kept.isEmpty, "kept: \(kept)")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: disk + "/dir")) ?? []) == ["A.app"])
        #expect(readFile(disk + "/dir/A.app/Data/a.txt") == "new Data/a.txt")
    }

    /// Carries out the first MOVE to a name set aside, then answers as a MOVE sent again
    /// after its answer was lost does (404).
    final class LostMoveAnswerStore: ForwardingStore, @unchecked Sendable {
        private var lost = false

        override func move(_ source: RemotePath, to destination: RemotePath, version: ETag?) async throws(ProviderError) -> RemoteEntry {
            let entry = try await inner.move(source, to: destination, version: version)
            guard !lost, destination.name.hasSuffix(BundleManifest.asideSuffix) else { return entry }
            lost = true
            throw ProviderError(.noSuchItem, "\(source) is not on the server (404)")
        }
    }

    /// Makes `file` (and `dir/keep.txt`) on a remote on disk and deletes an item through a `LostMoveAnswerStore` with `delete`: only `keep.txt` may be left.
    func deleteWithLostAnswer(_ file: String, _ delete: (SyncProvider, LocalDirectoryStore) async throws -> Void) async throws {
        let scratch = temporaryPath("tidesync-lost-")
        defer { removeTree(scratch) }
        let disk = scratch + "/remote"
        try writeFile(disk + "/" + file, "old")
        try writeFile(disk + "/dir/keep.txt", "keep")
        let database = try StateDatabase(path: scratch + "/state.sqlite")
        defer { try? database.close() }
        let inner = LocalDirectoryStore(root: disk)
        try await delete(SyncProvider(store: LostMoveAnswerStore(inner), state: database), inner)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: disk + "/dir")) ?? []) == ["keep.txt"])
    }

    @Test("a bundle whose set-aside MOVE landed though its answer was lost is checked and deleted")
    func lostAnswerBundle() async throws {
        try await deleteWithLostAnswer("dir/A.app/Index.xml") { provider, _ in
            let bundle = try RemotePath(string: "dir/A.app")
            let version = try #require(try await provider.bundleListing(at: bundle).entry.etag)
            try await provider.deleteBundle(bundle, version: version, scratchToken: "T")
        }
    }

    @Test("a folder whose set-aside MOVE landed though its answer was lost is checked and deleted")
    func lostAnswerFolder() async throws {
        try await deleteWithLostAnswer("dir/F/a.txt") { provider, inner in
            var folder: ItemRecord?
            for (path, kind) in [("dir", ItemKind.folder), ("dir/F", .folder), ("dir/F/a.txt", .file)] {
                let at = try RemotePath(string: path)
                let record = try provider.record(at: at, item: nil, kind: kind, remote: try await inner.entry(at: at), local: nil, operation: nil)
                if path == "dir/F" { folder = record }
            }
            try await provider.deleteFolder(try RemotePath(string: "dir/F"), of: try #require(folder), scratchToken: "T")
        }
    }
}
