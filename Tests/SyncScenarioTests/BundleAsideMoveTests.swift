import Foundation
import LocalStore
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
    /// version set aside, as another client did in the two-client test (Apache, seed 1207).
    final class FolderMovedBeforeDeleteStore: ForwardingStore, @unchecked Sendable {
        let folder: RemotePath, movedTo: RemotePath
        private var moved = false

        init(_ inner: any RemoteStore, folder: RemotePath, movedTo: RemotePath) {
            self.folder = folder
            self.movedTo = movedTo
            super.init(inner)
        }

        override func delete(_ path: RemotePath, version: ETag?) async throws(ProviderError) {
            if !moved, path.name.hasSuffix(BundleManifest.asideSuffix) {
                moved = true
                _ = try await inner.move(folder, to: movedTo, version: nil)
            }
            try await inner.delete(path, version: version)
        }
    }

    @Test("the old version set aside is deleted even when its folder was moved away before the delete")
    func asideFollowedAcrossAMove() async throws {
        let scratch = temporaryPath("tidesync-aside-")
        defer { removeTree(scratch) }
        let disk = scratch + "/remote"
        for file in ["dir/A.app/Contents/x.txt", "dir/.tidesync-bundle-T/Contents/x.txt"] {
            try writeFile(disk + "/" + file, file.hasPrefix("dir/A.app") ? "old" : "new")
        }
        let store = FolderMovedBeforeDeleteStore(LocalDirectoryStore(root: disk), folder: try RemotePath(["dir"]),
                                                 movedTo: try RemotePath(["moved"]))
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
}
