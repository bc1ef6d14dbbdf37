import Foundation
import Replica
import Synchronization
import SyncEngine
import Testing
import TestSupport

/// A folder deleted here is deleted on the server only with nothing in it that this machine
/// has not seen — even when another client's upload lands between the check and the delete.
@Suite("A folder delete races another client's upload")
struct FolderDeleteRaceTests {
    /// Forwards everything; just before the first MOVE or DELETE reaches the server (after
    /// any check the engine made), `arrive` runs once: another client's upload landing then.
    final class LateUploadStore: ForwardingStore, @unchecked Sendable {
        let arrive: @Sendable () throws -> Void
        let arrived = Mutex(false)

        init(_ inner: any RemoteStore, arrive: @escaping @Sendable () throws -> Void) {
            self.arrive = arrive
            super.init(inner)
        }

        private func first() throws(ProviderError) {
            guard arrived.withLock({ done in defer { done = true }; return !done }) else { return }
            do { try arrive() } catch { throw ProviderError(.cannotSynchronize, "the other client's upload failed: \(error)") }
        }

        override func move(_ source: RemotePath, to destination: RemotePath, version: ETag?) async throws(ProviderError) -> RemoteEntry {
            try first()
            return try await inner.move(source, to: destination, version: version)
        }

        override func delete(_ path: RemotePath, version: ETag?) async throws(ProviderError) {
            try first()
            try await inner.delete(path, version: version)
        }
    }

    /// The two-client test lost a version so: B's conflict copy was uploaded into `music`
    /// while A, which had deleted `music`, checked the folder and then deleted it whole.
    @Test("a file uploaded into a folder between the check and the delete is kept, and comes here",
          arguments: Remote.withOtherServers)
    func uploadDuringDelete(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.write("music/a.txt", "alpha")
            try world.write("music/deep/b.txt", "beta")
            try await world.sync()
            removeTree(world.local("music"))
            let store = LateUploadStore(world.store) { try world.writeOnServer("music/deep/theirs.txt", "theirs") }
            _ = try await RemoteMoveJournalTests.pass(world, provider: SyncProvider(store: store, state: world.database)).run()
            #expect(store.arrived.withLock { $0 }, "the pass sent no MOVE or DELETE")
            #expect(readFile(world.onServer("music/deep/theirs.txt")) == "theirs", "the other client's file was deleted")

            try await world.sync()
            #expect(readFile(world.local("music/deep/theirs.txt")) == "theirs")
            #expect(readFile(world.onServer("music/deep/theirs.txt")) == "theirs")
            #expect(SyncWorld.tree(world.remoteDisk).keys.allSatisfy { !$0.contains(".tidesync-") }, "scratch left on the server")
            try await world.expectAgreement()
        }
    }

    @Test("a folder nobody wrote to meanwhile is deleted, with nothing left behind", arguments: Remote.withOtherServers)
    func plainDelete(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.write("music/a.txt", "alpha")
            try world.write("music/deep/b.txt", "beta")
            try world.write("keep.txt", "kept")
            try await world.sync()
            removeTree(world.local("music"))
            try await world.sync()
            #expect(try await world.remoteTree() == ["keep.txt": .file("kept")])
            #expect(SyncWorld.tree(world.remoteDisk).keys.allSatisfy { !$0.contains(".tidesync-") }, "scratch left on the server")
            #expect(try world.database.pendingOperations().isEmpty)
        }
    }
}
