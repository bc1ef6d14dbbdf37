import Foundation
import Synchronization
import Testing
@testable import Replica

/// Folder fsyncs asked for at the same time share one, and none is shared with a caller
/// that came after it began (its rename might not be in it).
@Suite("Folder fsyncs shared")
struct FolderSyncsTests {
    /// What happened, in order.
    final class Log: @unchecked Sendable {
        enum Event: Equatable { case call(Int), start(Int), end(Int), back(Int) }
        private let lock = NSLock()
        private(set) var events: [Event] = []
        func add(_ event: Event) { lock.withLock { events.append(event) } }
        var all: [Event] { lock.withLock { events } }
    }

    @Test("callers that come while an fsync runs share the next one; each returns after one that began after it called")
    func shared() async throws {
        let syncs = FolderSyncs()
        let log = Log()
        let callers = 8
        let round = Mutex(0)
        @Sendable func startOthers() {
            for index in 1..<callers {
                Thread {
                    log.add(.call(index))
                    syncs.sync("/f") {
                        let r = round.withLock { $0 += 1; return $0 }
                        log.add(.start(r))
                        log.add(.end(r))
                    }
                    log.add(.back(index))
                }.start()
            }
        }
        // The first round starts the other callers and holds until every one of them waits,
        // so they all share the second (threads, not tasks: a busy test run cannot delay them).
        let first = Thread {
            log.add(.call(0))
            syncs.sync("/f") {
                let r = round.withLock { $0 += 1; return $0 }
                log.add(.start(r))
                startOthers()
                let deadline = Date().addingTimeInterval(120)  // a broken share fails, never hangs
                while syncs.callers(of: "/f") < callers, Date() < deadline { usleep(1000) }
                log.add(.end(r))
            }
            log.add(.back(0))
        }
        first.start()
        let allBack = await Self.eventually { log.all.filter { if case .back = $0 { true } else { false } }.count == callers }
        try #require(allBack, "\(log.all)")
        #expect(syncs.performed == 2)
        let events = log.all
        for caller in 0..<callers {
            let called = events.firstIndex(of: .call(caller)), back = events.firstIndex(of: .back(caller))
            let covered = (1...callers).contains { r in
                guard let called, let back, let start = events.firstIndex(of: .start(r)),
                      let end = events.firstIndex(of: .end(r)) else { return false }
                return called < start && end < back
            }
            #expect(covered, "caller \(caller): \(events)")
        }
        #expect(syncs.callers(of: "/f") == 0)
    }

    /// True once `condition` holds, false after 300 s.
    static func eventually(_ condition: () -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(300)
        while !condition() {
            guard Date() < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    @Test("different folders are not shared, and a lone caller gets its own fsync")
    func separate() {
        let syncs = FolderSyncs()
        var ran: [String] = []
        syncs.sync("/a") { ran.append("a") }
        syncs.sync("/b") { ran.append("b") }
        syncs.sync("/a") { ran.append("a") }
        #expect(ran == ["a", "b", "a"])
        #expect(syncs.performed == 3)
    }
}
