import Foundation
import Logging
import Replica
import StateDatabase
import Synchronization
import SyncEngine
import Testing
import TestSupport

/// What `status` lists as "in error" is only what still is: a step that failed because
/// the user edited its file meanwhile is no failure, and a failed step whose path both
/// sides agree on again is cleared by the next full pass (seen in the two-client test,
/// seed 90210: an agreed item listed in error until its retry time).
@Suite("Items in error are only those still in error")
struct SettledFailureTests {
    /// A store whose first upload of a conflict copy is met by the user's edit of the copy
    /// here, as a program that keeps writing would: the upload finds the file changed.
    final class EditedCopyStore: ForwardingStore, @unchecked Sendable {
        let localRoot: String
        let edited = Mutex(false)

        init(_ inner: any RemoteStore, localRoot: String) {
            self.localRoot = localRoot
            super.init(inner)
        }

        override func upload(from source: URL, to path: RemotePath, condition: WriteCondition,
                             progress: TransferProgress?) async throws(ProviderError) -> RemoteEntry {
            guard path.description.contains(" (conflicted copy "), !edited.withLock({ $0 }) else {
                return try await inner.upload(from: source, to: path, condition: condition, progress: progress)
            }
            edited.withLock { $0 = true }
            let copy = localRoot + "/" + path.description
            guard let handle = FileHandle(forUpdatingAtPath: copy) else { throw ProviderError(.noSuchItem, "\(copy) is missing") }
            handle.seekToEndOfFile()
            handle.write(Data(" and more".utf8))
            try? handle.close()
            throw ProviderError(.cannotSynchronize, "\(copy) changed while it was uploaded; it will be sent again")
        }
    }

    static func pass(_ world: SyncWorld, provider: SyncProvider, log: LogCapture = LogCapture()) -> SyncPass {
        let logger = Logger(label: "settled-failure") { _ in CapturingLogHandler(capture: log, logLevel: .debug) }
        let runner = PlanRunner(provider: provider, folder: LocalFolder(root: world.localRoot), transfers: 2, logger: logger)
        return SyncPass(runner: runner, scanner: LocalScanner(root: world.localRoot, exclude: ExcludeList(patterns: ExcludeList.defaultPatterns)),
                        host: "testhost", logger: logger)
    }

    @Test("a conflict copy edited while it was uploaded is no failure: the next pass sends it, nothing backs off",
          arguments: Remote.withOtherServers)
    func copyEditedDuringUpload(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.write("doc.txt", "base")
            try await world.sync()
            // Another size than "base": a same-size write on the server's disk within the
            // second is not seen where versions are a time in seconds and a size (WsgiDAV,
            // nginx; README, compatibility), and this test is about the copy, not that.
            try world.writeOnServer("doc.txt", "AAAAAAAA")
            try world.write("doc.txt", "BBBB")
            let store = EditedCopyStore(world.store, localRoot: world.localRoot)
            let log = LogCapture()
            let result = try await Self.pass(world, provider: SyncProvider(store: store, state: world.database), log: log).run()
            // The pass's log says why when it did not get that far (seen once on a loaded
            // machine, Apache, unexplained: the copy was made by the next pass).
            #expect(store.edited.withLock { $0 }, "no conflict copy was uploaded; the pass's log:\n\(log.all.joined(separator: "\n"))")
            #expect(result.report.failed.isEmpty, "a failure was booked: \(result.report.failed)")
            let journal = try world.database.pendingOperations()
            #expect(journal.filter { $0.attempts > 0 }.isEmpty, "in error: \(journal)")
            try await world.sync()
            let copies = world.serverCopies(of: "doc.txt")
            #expect(copies.count == 1)
            #expect(copies.first.map { readFile(world.local($0)) } == "BBBB and more")
            try await world.expectAgreement()
        }
    }

    @Test("a failed step whose path is in agreement again is cleared by the next full pass", arguments: Remote.withOtherServers)
    func agreedAgain(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try await RemoteMoveJournalTests.renamedFile(world)
            let store = RemoteMoveJournalTests.FaultyMoveStore(world.store, fault: .refuseMove)
            _ = try await Self.pass(world, provider: SyncProvider(store: store, state: world.database)).run()
            #expect(try world.database.pendingOperations().filter { $0.attempts > 0 }.count == 1, "the MOVE did not fail")
            // The user renames it back: both sides agree with the record again.
            #expect(rename(world.local("b.txt"), world.local("a.txt")) == 0)
            let result = try await Self.pass(world, provider: SyncProvider(store: world.store, state: world.database)).run()
            #expect(result.steps == 0)
            let journal = try world.database.pendingOperations()
            #expect(journal.isEmpty, "still in error: \(journal)")
            try await world.expectAgreement()
        }
    }
}
