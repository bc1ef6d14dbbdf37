import Foundation
import Synchronization
import LocalStore
import Logging
import Replica
import StateDatabase
import SyncEngine
import Testing
import TestSupport

/// A request the server fails for one item (HTTP 500 on a PUT: lighttpd and a name too
/// long for its temporary name) is that item's failure, with a backoff; the rest of the
/// domain syncs on. A server failing several items in a row parks the domain instead of
/// being sent one failing request per item.
@Suite("one item the server fails")
struct ServerFailureScenarioTests {
    @Test("lighttpd's 500 for a name it cannot store fails that file alone; the rest syncs and the domain does not park",
          .enabled(if: TestDAVServer.lighttpd.configured, "lighttpd is not running (packaging/test.sh starts it)"))
    func lighttpdLongName() async throws {
        try await withWorld(.lighttpd) { world in
            let long = String(repeating: "n", count: 250) + ".txt"  // above lighttpd's 245 bytes
            for index in 0..<20 { try world.write("f\(index).txt", "file \(index)") }
            try world.write(long, "too long a name for lighttpd")
            let first = try await world.pass.run()
            #expect(first.report.parked == nil, "\(String(describing: first.report.parked))")
            #expect(first.report.failed.map(\.path.name) == [long])
            #expect(first.report.failed.first?.error.code == .serverFailedItem)
            for index in 0..<20 { #expect(world.serverText("f\(index).txt") == "file \(index)") }
            // Backing off: the next pass leaves it alone and still does not park.
            let second = try await world.pass.run()
            #expect(second.report.parked == nil && second.report.failed.isEmpty)
            #expect(try world.database.pendingOperations().contains { $0.attempts == 1 && $0.lastError?.contains("HTTP 500") == true })
        }
    }

    /// Fails every upload of a name holding "bad" as a server would with a 500, and
    /// counts the uploads asked for.
    final class FailingUploadsStore: ForwardingStore, @unchecked Sendable {
        private let count = Mutex(0)
        var uploads: Int { count.withLock { $0 } }

        override func upload(from source: URL, to path: RemotePath, condition: WriteCondition,
                             progress: TransferProgress?) async throws(ProviderError) -> RemoteEntry {
            count.withLock { $0 += 1 }
            guard !path.name.contains("bad") else {
                throw ProviderError(.serverFailedItem, "the server failed PUT \(path); this item is tried again later", underlying: "HTTP 500 Internal Server Error")
            }
            return try await inner.upload(from: source, to: path, condition: condition, progress: progress)
        }
    }

    @Test("three items failed in a row park the domain and stop the pass; failures between successes do not")
    func threeInARow() async throws {
        for (names, parks) in [(["bad1", "bad2", "bad3", "bad4", "good"], true), (["a-bad", "b-good", "c-bad", "d-good", "e-bad", "f-good"], false)] {
            let scratch = temporaryPath("tidesync-server-failure-")
            defer { removeTree(scratch) }
            try FileManager.default.createDirectory(atPath: scratch + "/remote", withIntermediateDirectories: true)
            for name in names { try writeFile(scratch + "/local/" + name, name) }
            let store = FailingUploadsStore(LocalDirectoryStore(root: scratch + "/remote"))
            let database = try StateDatabase(path: scratch + "/state.sqlite")
            defer { try? database.close() }
            // One transfer at a time: the plan's order (by name) is the order of the answers.
            let pass = SyncWorld.makePass(store: store, database: database, localRoot: scratch + "/local", transfers: 1, host: "testhost")
            let report = try await pass.run().report
            let uploaded = try FileManager.default.contentsOfDirectory(atPath: scratch + "/remote").filter { !$0.hasPrefix(".") }.sorted()
            if parks {
                #expect(report.parked?.code == .serverFailedItem, "\(String(describing: report.parked))")
                #expect(store.uploads == 3, "no request after the third failure")
                #expect(uploaded.isEmpty)
                // Their backoff over (a clock an hour ahead), the three fail again with bad4,
                // but only bad4 is a new failure: the domain does not park, "good" is sent.
                var logger = Logger(label: "server-failure")
                logger.logLevel = .critical
                let later = SyncProvider(store: store, state: database, clock: RemoteMoveJournalTests.AheadClock(offset: 3600))
                let retry = SyncPass(runner: PlanRunner(provider: later, folder: LocalFolder(root: scratch + "/local", bundles: .standard),
                                                        transfers: 1, logger: logger),
                                     scanner: LocalScanner(root: scratch + "/local", exclude: ExcludeList(patterns: ExcludeList.defaultPatterns),
                                                           bundles: .standard),
                                     host: "testhost", logger: logger)
                let second = try await retry.run().report
                #expect(second.parked == nil, "\(String(describing: second.parked))")
                #expect(readFile(scratch + "/remote/good") == "good")
            } else {
                #expect(report.parked == nil, "\(String(describing: report.parked))")
                #expect(report.failed.count == 3)
                #expect(uploaded == ["b-good", "d-good", "f-good"])
            }
        }
    }
}
