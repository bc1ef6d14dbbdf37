import Foundation
import LocalStore
import Replica
@testable import SyncEngine
import StateDatabase
import Testing
import TestSupport

/// A bundle replaced on a store without an exchange (WebDAV): the old version is set aside,
/// the new one moved in, and the old one deleted. Another client may move the bundle's
/// folder in between.
@Suite("Bundle replacement beside a folder move")
struct BundleAsideMoveTests {
    /// Moves the folder `folder` to `movedTo` just before the first DELETE of an old bundle
    /// version set aside (or doomed), as another client did in the two-client test (Apache,
    /// seed 1207); with `beforeDoom`, just before the old version, checked, is renamed to
    /// its doomed name instead.
    final class FolderMovedBeforeDeleteStore: ForwardingStore, @unchecked Sendable {
        let folder: RemotePath, movedTo: RemotePath, beforeDoom: Bool
        private var moved = false

        init(_ inner: any RemoteStore, folder: RemotePath, movedTo: RemotePath, beforeDoom: Bool = false) {
            self.folder = folder
            self.movedTo = movedTo
            self.beforeDoom = beforeDoom
            super.init(inner)
        }

        private func moveFolderOnce() async throws(ProviderError) {
            guard !moved else { return }
            moved = true
            _ = try await inner.move(folder, to: movedTo, version: nil)
        }

        override func delete(_ path: RemotePath, version: ETag?) async throws(ProviderError) {
            if !beforeDoom, path.name.hasSuffix(BundleManifest.asideSuffix) || path.name.hasSuffix(BundleManifest.doomedSuffix) {
                try await moveFolderOnce()
            }
            try await inner.delete(path, version: version)
        }

        override func move(_ source: RemotePath, to destination: RemotePath, version: ETag?) async throws(ProviderError) -> RemoteEntry {
            if beforeDoom, destination.name.hasSuffix(BundleManifest.doomedSuffix) { try await moveFolderOnce() }
            return try await inner.move(source, to: destination, version: version)
        }
    }

    @Test("the old version, checked, is deleted even when its folder was moved away before its last rename")
    func asideFollowedBeforeDoom() async throws {
        try await replaceAcrossAMove { FolderMovedBeforeDeleteStore($0, folder: $1, movedTo: $2, beforeDoom: true) }
    }

    @Test("the old version set aside is deleted even when its folder was moved away before the delete")
    func asideFollowedAcrossAMove() async throws {
        try await replaceAcrossAMove { FolderMovedBeforeDeleteStore($0, folder: $1, movedTo: $2) }
    }

    /// Replaces `dir/A.app` (old) by the version built at its scratch name (new) through
    /// the store `moving` makes, which moves `dir` to `moved` at some point: the new version
    /// ends up in `moved`, with nothing left beside it.
    func replaceAcrossAMove(_ moving: (any RemoteStore, RemotePath, RemotePath) -> any RemoteStore) async throws {
        let scratch = temporaryPath("tidesync-aside-")
        defer { removeTree(scratch) }
        let disk = scratch + "/remote"
        for file in ["dir/A.app/Contents/x.txt", "dir/.tidesync-bundle-T/Contents/x.txt"] {
            try writeFile(disk + "/" + file, file.hasPrefix("dir/A.app") ? "old" : "new")
        }
        let store = moving(LocalDirectoryStore(root: disk), try RemotePath(["dir"]), try RemotePath(["moved"]))
        let database = try StateDatabase(path: scratch + "/state.sqlite")
        defer { try? database.close() }
        let provider = SyncProvider(store: store, state: database)
        let bundle = try RemotePath(string: "dir/A.app")
        let base = try #require(try await provider.bundleListing(at: bundle).entry.etag)
        try await provider.swapIn(try BundleScratch(beside: bundle, token: "T"), at: bundle, base: base)
        #expect(readFile(disk + "/moved/A.app/Contents/x.txt") == "new")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: disk + "/moved")) ?? []
        #expect(left == ["A.app"], "left beside the bundle: \(left)")
    }

    /// Leaves the entries named like a version set aside (or doomed) out of the first walk of the whole
    /// tree, as a walk that ran while another client moved their folder misses them.
    final class FirstWalkMissesAsideStore: ForwardingStore, @unchecked Sendable {
        private var walks = 0

        override func descendants(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry] {
            let entries = try await inner.descendants(of: path)
            guard path.isRoot else { return entries }
            walks += 1
            return walks > 1 ? entries : entries.filter {
                !$0.path.name.hasSuffix(BundleManifest.asideSuffix) && !$0.path.name.hasSuffix(BundleManifest.doomedSuffix)
            }
        }
    }

    @Test("the old version set aside is found by a second walk when the first one missed it")
    func asideMissedByOneWalk() async throws {
        try await replaceAcrossAMove { FirstWalkMissesAsideStore(FolderMovedBeforeDeleteStore($0, folder: $1, movedTo: $2)) }
    }

    @Test("the old version set aside is checked and deleted where its folder was moved to before it was listed")
    func asideListedAcrossAMove() async throws {
        // Right after the new version is moved in, before the old one set aside is listed.
        try await replaceAcrossAMove { store, folder, movedTo in
            FolderMovedAfterMoveStore(store, folder: folder, movedTo: movedTo) { source, _ in
                source.name.hasPrefix(BundleManifest.scratchPrefix) && !source.name.hasSuffix(BundleManifest.asideSuffix)
            }
        }
    }
}

/// The same for a bundle deleted on a store without an exchange: it is set aside, checked,
/// and deleted; another client moves its folder right after the set-aside (two-client test,
/// rclone seed 1207: `dir-A26/dir-A65/.tidesync-bundle-…-old` was left).
@Suite("Bundle deletion beside a folder move")
struct BundleDeleteAsideMoveTests {
    /// Deletes `dir/A.app` (holding `old`) as of the version `version` picks, through a store
    /// that moves `dir` to `moved` right after the bundle is set aside. Returns the remote's
    /// folder on disk and the error, if any.
    func deleteAcrossAMove(old: String, version: (SyncProvider, RemotePath) async throws -> ETag) async throws -> (String, ProviderError?) {
        let scratch = temporaryPath("tidesync-aside-")
        let disk = scratch + "/remote"
        try writeFile(disk + "/dir/A.app/Contents/x.txt", old)
        try writeFile(disk + "/dir/keep.txt", "keep")
        let store = FolderMovedAfterMoveStore(LocalDirectoryStore(root: disk), folder: try RemotePath(["dir"]),
                                              movedTo: try RemotePath(["moved"])) { $1.name.hasSuffix(BundleManifest.asideSuffix) }
        let database = try StateDatabase(path: scratch + "/state.sqlite")
        defer { try? database.close() }
        let provider = SyncProvider(store: store, state: database)
        let bundle = try RemotePath(string: "dir/A.app")
        do {
            try await provider.deleteBundle(bundle, version: try await version(provider, bundle), scratchToken: "T")
            return (disk, nil)
        } catch let error as ProviderError {
            return (disk, error)
        }
    }

    @Test("a deleted bundle's old version set aside is deleted where its folder was moved to")
    func deletedAcrossAMove() async throws {
        let (disk, error) = try await deleteAcrossAMove(old: "old") { provider, bundle in
            try #require(try await provider.bundleListing(at: bundle).entry.etag)
        }
        defer { removeTree((disk as NSString).deletingLastPathComponent) }
        #expect(error == nil, "\(String(describing: error))")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: disk + "/moved")) ?? []
        #expect(left == ["keep.txt"], "left in the moved folder: \(left)")
    }

    @Test("a bundle changed since the delete's version goes back in place in the folder it was moved to")
    func changedGoesBackAcrossAMove() async throws {
        let (disk, error) = try await deleteAcrossAMove(old: "theirs") { _, _ in ETag(value: "not-this-one") }
        defer { removeTree((disk as NSString).deletingLastPathComponent) }
        #expect(error?.code == .deletionRejected, "\(String(describing: error))")
        #expect(readFile(disk + "/moved/A.app/Contents/x.txt") == "theirs")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: disk + "/moved")) ?? []
        #expect(left.sorted() == ["A.app", "keep.txt"], "in the moved folder: \(left)")
    }
}

/// Moves the folder `folder` to `movedTo` (as another client would) right after the first
/// move that `trigger` picks by its source and destination.
final class FolderMovedAfterMoveStore: ForwardingStore, @unchecked Sendable {
    let folder: RemotePath, movedTo: RemotePath
    let trigger: @Sendable (RemotePath, RemotePath) -> Bool
    private var moved = false

    init(_ inner: any RemoteStore, folder: RemotePath, movedTo: RemotePath, trigger: @escaping @Sendable (RemotePath, RemotePath) -> Bool) {
        self.folder = folder
        self.movedTo = movedTo
        self.trigger = trigger
        super.init(inner)
    }

    override func move(_ source: RemotePath, to destination: RemotePath, version: ETag?) async throws(ProviderError) -> RemoteEntry {
        let entry = try await inner.move(source, to: destination, version: version)
        if !moved, trigger(source, destination) {
            moved = true
            _ = try await inner.move(folder, to: movedTo, version: nil)
        }
        return entry
    }
}

/// A folder deleted on the server is set aside, checked there against its rows, and
/// deleted; another client moves its parent right after the set-aside.
@Suite("Folder deletion beside a folder move")
struct FolderDeleteAsideMoveTests {
    /// Records `dir/F` with `a.txt` in it, then deletes `dir/F` through a store that moves
    /// `dir` to `moved` right after the set-aside, calling `meanwhile` (with the aside's
    /// path on disk) first. Returns the folder on disk and the error, if any.
    func deleteAcrossAMove(meanwhile: @escaping @Sendable (String) -> Void) async throws -> (String, ProviderError?) {
        try await deleteAcrossAMove { inner, disk in
            FolderMovedAfterMoveStore(inner, folder: try RemotePath(["dir"]), movedTo: try RemotePath(["moved"])) { _, to in
                guard to.name.hasSuffix(BundleManifest.asideSuffix) else { return false }
                meanwhile(disk + "/" + to.description)
                return true
            }
        }
    }

    /// The same through the store `moving` makes of the remote (and its folder on disk).
    func deleteAcrossAMove(_ moving: (LocalDirectoryStore, String) throws -> any RemoteStore) async throws -> (String, ProviderError?) {
        let scratch = temporaryPath("tidesync-aside-")
        let disk = scratch + "/remote"
        try writeFile(disk + "/dir/F/a.txt", "a")
        let inner = LocalDirectoryStore(root: disk)
        let store = try moving(inner, disk)
        let database = try StateDatabase(path: scratch + "/state.sqlite")
        defer { try? database.close() }
        let provider = SyncProvider(store: store, state: database)
        var folder: ItemRecord?
        for (path, kind) in [("dir", ItemKind.folder), ("dir/F", .folder), ("dir/F/a.txt", .file)] {
            let at = try RemotePath(string: path)
            let record = try provider.record(at: at, item: nil, kind: kind, remote: try await inner.entry(at: at), local: nil, operation: nil)
            if path == "dir/F" { folder = record }
        }
        do {
            try await provider.deleteFolder(try RemotePath(string: "dir/F"), of: try #require(folder), scratchToken: "T")
            return (disk + "/moved", nil)
        } catch let error as ProviderError {
            return (disk + "/moved", error)
        }
    }

    @Test("a deleted folder set aside is checked and deleted where its parent was moved to")
    func deletedAcrossAMove() async throws {
        let (moved, error) = try await deleteAcrossAMove { _ in }
        defer { removeTree(((moved as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent) }
        #expect(error == nil, "\(String(describing: error))")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: moved)) ?? ["(no folder)"]
        #expect(left.isEmpty, "left in the moved parent: \(left)")
    }

    @Test("a folder another client wrote into goes back in place where its parent was moved to")
    func writtenIntoGoesBackAcrossAMove() async throws {
        let (moved, error) = try await deleteAcrossAMove { aside in
            try? writeFile(aside + "/theirs.txt", "another client's file")
        }
        defer { removeTree(((moved as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent) }
        #expect(error?.code == .deletionRejected, "\(String(describing: error))")
        #expect(readFile(moved + "/F/theirs.txt") == "another client's file")
        #expect(readFile(moved + "/F/a.txt") == "a")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: moved)) ?? ["(no folder)"]
        #expect(left == ["F"], "in the moved parent: \(left)")
    }

    /// Writes `theirs.txt` into the folder as it is set aside (another client's upload that
    /// came after the first check), then moves `dir` to `moved` just before the folder set
    /// aside is listed to be checked.
    final class MovedWhileCheckedStore: ForwardingStore, @unchecked Sendable {
        let disk: String
        private var moved = false

        init(_ inner: any RemoteStore, disk: String) {
            self.disk = disk
            super.init(inner)
        }

        override func move(_ source: RemotePath, to destination: RemotePath, version: ETag?) async throws(ProviderError) -> RemoteEntry {
            let entry = try await inner.move(source, to: destination, version: version)
            if destination.name.hasSuffix(BundleManifest.asideSuffix) {
                try? writeFile(disk + "/" + destination.description + "/theirs.txt", "another client's file")
            }
            return entry
        }

        func moveFirst(_ path: RemotePath) async throws(ProviderError) {
            if !moved, path.name.hasSuffix(BundleManifest.asideSuffix) {
                moved = true
                _ = try await inner.move(try RemotePath(["dir"]), to: try RemotePath(["moved"]), version: nil)
            }
        }

        override func descendants(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry] {
            try await moveFirst(path)
            return try await inner.descendants(of: path)
        }

        override func listing(below path: RemotePath) async throws(ProviderError) -> RemoteListing {
            try await moveFirst(path)
            return try await inner.listing(below: path)
        }
    }

    @Test("a folder set aside that moves on while it is checked is not deleted unchecked")
    func movedWhileChecked() async throws {
        let (moved, error) = try await deleteAcrossAMove { MovedWhileCheckedStore($0, disk: $1) }
        defer { removeTree(((moved as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent) }
        #expect(error?.code == .deletionRejected, "\(String(describing: error))")
        #expect(readFile(moved + "/F/theirs.txt") == "another client's file")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: moved)) ?? ["(no folder)"]
        #expect(left == ["F"], "in the moved parent: \(left)")
    }
}

/// A member PUT that lands somewhere else than where it was sent (rclone lets another
/// client move the folder in the middle of a PUT into it; two-client test, rclone seed
/// 1207 beside CPU hogs: a bundle on the server lacked one of its three members).
@Suite("A bundle member that does not arrive")
struct BundleMemberLostTests {
    /// Sends `member-2.txt` of any bundle being built to `misplaced.txt` at the root instead.
    final class MisplacingStore: ForwardingStore, @unchecked Sendable {
        override func upload(from source: URL, to path: RemotePath, condition: WriteCondition,
                             progress: TransferProgress?) async throws(ProviderError) -> RemoteEntry {
            guard path.name == "member-2.txt", path.components.contains(where: { $0.hasPrefix(BundleManifest.scratchPrefix) }) else {
                return try await inner.upload(from: source, to: path, condition: condition, progress: progress)
            }
            var entry = try await inner.upload(from: source, to: try RemotePath(["misplaced.txt"]), condition: .mustNotExist, progress: progress)
            entry.path = path
            return entry
        }
    }

    @Test("the new version is not published without it, and nothing is left", arguments: Remote.withOtherServers)
    func notPublished(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try BundleScenarioTests.makeBundle(world, "New.app", files: 4)
            let path = try RemotePath(string: "New.app")
            let bundle = try #require(LocalBundle.scan(at: world.local("New.app"), path: path))
            let members = try bundle.manifest(root: world.local("New.app"), previous: [])
            let provider = SyncProvider(store: MisplacingStore(world.store), state: world.database)
            var failure: ProviderError?
            do {
                try await provider.uploadBundle(BundleContents(directory: URL(fileURLWithPath: world.local("New.app")), members: members),
                                                to: path, condition: .mustNotExist, source: bundle.stat, item: nil,
                                                scratchToken: UUID().uuidString, operation: nil)
            } catch {
                failure = error as? ProviderError
            }
            #expect(failure?.code == .serverUnreachable, "\(String(describing: failure))")
            #expect(BundleScenarioTests.serverManifest(world, "New.app").isEmpty, "published without a member")
            #expect(BundleFailureTests.scratchNames(world).isEmpty, "scratch left: \(BundleFailureTests.scratchNames(world))")
        }
    }
}
