import Foundation
import Logging
import Replica
import StateDatabase
import Synchronization
import SyncEngine
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A remote MOVE is journaled like every other remote write: a crash right after the
/// server moved the item, or a MOVE the server refused, leaves its journal entry, and a
/// later pass finishes it (STYLE.md §9).
@Suite("A remote MOVE cut short is recovered from the journal")
struct RemoteMoveJournalTests {
    /// What goes wrong at the first MOVE.
    enum Fault: Sendable {
        /// The server moves the item, then the process dies: nothing more reaches the state DB.
        case crashAfterMove
        /// The server refuses the MOVE with an error that backs the item off.
        case refuseMove
    }

    /// A store that forwards everything, and `fault`s at the first MOVE.
    final class FaultyMoveStore: ForwardingStore, @unchecked Sendable {
        let fault: Fault
        /// Set once the fault happened.
        let faulted = Mutex(false)

        init(_ inner: any RemoteStore, fault: Fault) {
            self.fault = fault
            super.init(inner)
        }

        override func move(_ source: RemotePath, to destination: RemotePath, version: ETag?) async throws(ProviderError) -> RemoteEntry {
            switch fault {
            case .refuseMove:
                faulted.withLock { $0 = true }
                throw ProviderError(.cannotSynchronize, "the server refused the MOVE")
            case .crashAfterMove:
                let entry = try await inner.move(source, to: destination, version: version)
                faulted.withLock { $0 = true }
                return entry
            }
        }
    }

    /// The state DB of a process that dies when `store` faults: reads go on, writes fail.
    final class DyingState: StateStore {
        let inner: StateDatabase
        let store: FaultyMoveStore

        init(_ inner: StateDatabase, dyingWith store: FaultyMoveStore) {
            self.inner = inner
            self.store = store
        }

        private func alive() throws(ProviderError) {
            if store.faulted.withLock({ $0 }) { throw ProviderError(.cannotSynchronize, "the process is dead") }
        }

        func item(_ id: ItemIdentifier) throws(ProviderError) -> ItemRecord? { try inner.item(id) }
        func item(parent: ItemIdentifier, name: String) throws(ProviderError) -> ItemRecord? { try inner.item(parent: parent, name: name) }
        func children(of parent: ItemIdentifier) throws(ProviderError) -> [ItemRecord] { try inner.children(of: parent) }
        func allItems() throws(ProviderError) -> [ItemRecord] { try inner.allItems() }
        func item(localInode: UInt64) throws(ProviderError) -> ItemRecord? { try inner.item(localInode: localInode) }
        func item(remoteFileID: String) throws(ProviderError) -> ItemRecord? { try inner.item(remoteFileID: remoteFileID) }
        func syncAnchor() throws(ProviderError) -> SyncAnchor? { try inner.syncAnchor() }
        func remoteIdentity() throws(ProviderError) -> RemoteIdentity? { try inner.remoteIdentity() }
        func hydratedRanges(of id: ItemIdentifier) throws(ProviderError) -> (ranges: RangeSet, version: ETag?) {
            try inner.hydratedRanges(of: id)
        }
        func bundleMembers(of id: ItemIdentifier) throws(ProviderError) -> [BundleMember] { try inner.bundleMembers(of: id) }
        func pendingOperations() throws(ProviderError) -> [PendingOperation] { try inner.pendingOperations() }
        func unreadableFolders() throws(ProviderError) -> [UnreadableFolder] { try inner.unreadableFolders() }

        func heldDeletions() throws(ProviderError) -> DeletionHold.Summary? { try inner.heldDeletions() }

        func recordHeldDeletions(_ held: DeletionHold.Summary?) throws(ProviderError) {
            try alive()
            try inner.recordHeldDeletions(held)
        }

        func journal(_ operation: PendingOperation) throws(ProviderError) -> Int64 { try alive(); return try inner.journal(operation) }
        func journal(_ operations: [PendingOperation]) throws(ProviderError) -> [Int64] { try alive(); return try inner.journal(operations) }
        func apply(_ changes: [StateChange]) throws(ProviderError) { try alive(); try inner.apply(changes) }
        func recordUnreadableFolders(_ folders: [UnreadableFolder]) throws(ProviderError) {
            try alive()
            try inner.recordUnreadableFolders(folders)
        }
    }

    /// The system clock, `offset` ahead: a pass run after a backoff, without waiting for it.
    struct AheadClock: SyncClock {
        let offset: TimeInterval
        func now() -> Date { Date().addingTimeInterval(offset) }
        func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
    }

    /// A pass of `world`'s folder through `provider`.
    static func pass(_ world: SyncWorld, provider: SyncProvider) -> SyncPass {
        var logger = Logger(label: "move-journal")
        logger.logLevel = .critical
        let runner = PlanRunner(provider: provider, folder: LocalFolder(root: world.localRoot), transfers: 2, logger: logger)
        return SyncPass(runner: runner, scanner: LocalScanner(root: world.localRoot, exclude: ExcludeList(patterns: ExcludeList.defaultPatterns)),
                        host: "testhost", logger: logger)
    }

    /// `a.txt` synced, then renamed to `b.txt` here: the next plan moves it on the server.
    static func renamedFile(_ world: SyncWorld) async throws {
        try world.write("a.txt", "alpha")
        try await world.sync()
        #expect(rename(world.local("a.txt"), world.local("b.txt")) == 0)
    }

    @Test("a crash right after the server's MOVE leaves it in the journal; the next pass finishes it",
          arguments: Remote.withOtherServers)
    func crashAfterMove(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try await Self.renamedFile(world)
            let store = FaultyMoveStore(world.store, fault: .crashAfterMove)
            let dying = SyncProvider(store: store, state: DyingState(world.database, dyingWith: store))
            _ = try? await Self.pass(world, provider: dying).run()
            #expect(store.faulted.withLock { $0 }, "the plan made no MOVE")
            let left = try world.database.pendingOperations()
            #expect(left.map(\.kind) == ["move-remote"] && left.allSatisfy { $0.attempts == 0 }, "journal after the crash: \(left)")
            #expect(try await world.remoteTree() == ["b.txt": .file("alpha")])

            try await world.sync()
            #expect(try world.database.pendingOperations().isEmpty)
            #expect(SyncWorld.tree(world.localRoot) == ["b.txt": .file("alpha")])
            try await world.expectAgreement()
        }
    }

    @Test("a MOVE the server refused backs off in the journal; the pass after the backoff makes it",
          arguments: Remote.withOtherServers)
    func refusedMove(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try await Self.renamedFile(world)
            let store = FaultyMoveStore(world.store, fault: .refuseMove)
            let result = try await Self.pass(world, provider: SyncProvider(store: store, state: world.database)).run()
            #expect(result.report.failed.map(\.path) == [try RemotePath(string: "b.txt")])
            let left = try world.database.pendingOperations()
            #expect(left.map(\.kind) == ["move-remote"] && left.allSatisfy { $0.attempts == 1 && $0.notBefore! > Date() },
                    "journal after the refusal: \(left)")
            #expect(try await world.remoteTree() == ["a.txt": .file("alpha")])

            let later = SyncProvider(store: world.store, state: world.database, clock: AheadClock(offset: 3600))
            let retry = try await Self.pass(world, provider: later).run()
            #expect(retry.report.failed.isEmpty && retry.report.succeeded == 1, "the retry: \(retry.report)")
            #expect(try world.database.pendingOperations().isEmpty)
            #expect(try await world.remoteTree() == ["b.txt": .file("alpha")])
            try await world.expectAgreement()
        }
    }
}
