import Foundation
import SyncEngine
import SyncModel
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The sync folder is known by its inode and the inode's generation: ext4 gives a folder
/// deleted and made again at once its old inode number back, and an empty folder taken for
/// the synced one reads as "the user deleted everything".
@Suite("the sync folder's identity")
struct RootIdentityTests {
    @Test("a sync folder deleted and made again at once is refused, even with its old inode number", arguments: Remote.withOtherServers)
    func remadeAtOnce(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            for index in 0..<5 { try world.write("docs/file\(index).txt", "\(index)") }
            try await world.sync()
            var before = stat(), after = stat()
            #expect(lstat(world.localRoot, &before) == 0)
            try FileManager.default.removeItem(atPath: world.localRoot)
            // Made again until it has its old inode number (ext4 usually hands it back at
            // once; other tests making files meanwhile may take it first).
            var tries = 0
            repeat {
                if tries > 0 { #expect(rmdir(world.localRoot) == 0) }
                tries += 1
                #expect(mkdir(world.localRoot, 0o755) == 0)
                #expect(lstat(world.localRoot, &after) == 0)
            } while after.st_ino != before.st_ino && tries < 200
            try world.write("new.txt", "made in the new folder")
            print("sync folder remade (\(remote)): inode \(before.st_ino) then \(after.st_ino) after \(tries) tries\(before.st_ino == after.st_ino ? " (reused)" : "")")
            do {
                _ = try await world.pass.run()
                Issue.record("a pass over a folder made again ran instead of stopping")
            } catch let error as ProviderError {
                #expect(error.code == .cannotSynchronize && error.message.contains("is not the folder synced before"), "\(error.message)")
            }
            #expect(world.serverText("docs/file3.txt") == "3", "nothing deleted on the server")
            #expect(world.serverText("new.txt") == nil, "nothing of the new folder uploaded")
        }
    }

    /// `rm -rf` of the sync folder removes its files first and the folder last. A pass that
    /// scanned in between saw the files deleted, and deleted them on the server (19 of 20
    /// files on WsgiDAV in a watcher scenario) before the watcher said the folder was gone.
    @Test("a sync folder deleted while a pass looks at the server deletes nothing there", arguments: Remote.withOtherServers)
    func removedDuringPass(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            for index in 0..<5 { try world.write("docs/file\(index).txt", "\(index)") }
            try await world.sync()
            // The files go first, as rm -rf removes them; the folder itself goes while the
            // pass walks the server, after it scanned the files as deleted.
            try FileManager.default.removeItem(atPath: world.local("docs"))
            let store = RootRemovingStore(world.store, root: world.localRoot, at: .walk)
            let pass = SyncWorld.makePass(store: store, database: world.database, localRoot: world.localRoot, host: "testhost")
            do {
                let result = try await pass.run()
                Issue.record("the pass ran \(result.steps) step(s) instead of stopping")
            } catch let error as ProviderError {
                #expect(error.code == .cannotSynchronize, "\(error.message)")
            }
            #expect(store.removed.withLock { $0 }, "the test's premise: the folder went during the walk")
            #expect(world.serverText("docs/file3.txt") == "3", "nothing deleted on the server")
        }
    }

    /// The sync folder gone while a plan's deletes run (`rm -rf` of a large folder ending
    /// after the pass looked): the deletes not yet sent are not sent.
    @Test("a sync folder deleted while a pass deletes on the server stops the deletes not yet sent", arguments: Remote.withOtherServers)
    func removedDuringDeletes(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            let names = (0..<10).map { "gone\($0).txt" }
            for name in names + ["kept.txt"] { try world.write(name, name) }
            try await world.sync()
            for name in names { try FileManager.default.removeItem(atPath: world.local(name)) }
            let store = RootRemovingStore(world.store, root: world.localRoot, at: .delete)
            let pass = SyncWorld.makePass(store: store, database: world.database, localRoot: world.localRoot, host: "testhost")
            _ = try? await pass.run()
            #expect(store.removed.withLock { $0 }, "the test's premise: the folder went at the first delete")
            // At most the deletes already under way (one per transfer slot) went through.
            let left = names.filter { world.serverText($0) == $0 }
            #expect(left.count >= names.count - 4, "deleted on the server after the sync folder went: \(names.filter { !left.contains($0) })")
        }
    }
}

/// Removes the sync folder once, at the first listing of the server (the pass scanned
/// already) or at the first DELETE sent to it (then sends it).
final class RootRemovingStore: ForwardingStore, @unchecked Sendable {
    enum Moment { case walk, delete }

    let root: String
    let moment: Moment
    let removed = Mutex(false)

    init(_ inner: any RemoteStore, root: String, at moment: Moment) {
        self.root = root
        self.moment = moment
        super.init(inner)
    }

    private func removeOnce(_ now: Moment) {
        guard now == moment, removed.withLock({ done in defer { done = true }; return !done }) else { return }
        try? FileManager.default.removeItem(atPath: root)
    }

    override func children(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry] {
        removeOnce(.walk)
        return try await super.children(of: path)
    }

    override func descendants(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry] {
        removeOnce(.walk)
        return try await super.descendants(of: path)
    }

    override func listing(below path: RemotePath) async throws(ProviderError) -> RemoteListing {
        removeOnce(.walk)
        return try await super.listing(below: path)
    }

    override func delete(_ path: RemotePath, version: ETag?) async throws(ProviderError) {
        removeOnce(.delete)
        try await super.delete(path, version: version)
    }
}
