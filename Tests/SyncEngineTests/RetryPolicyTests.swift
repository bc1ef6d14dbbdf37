import SyncEngine
import Testing

/// The one retry policy: a parked domain and a failed item wait the same way, doubling
/// from their first wait up to their cap.
@Suite("RetryPolicy: doubling to a cap")
struct RetryPolicyTests {
    @Test("a parked domain waits 5 s, doubling, at most 5 min", arguments: [
        (0, 5), (1, 5), (2, 10), (3, 20), (4, 40), (5, 80), (6, 160), (7, 300), (8, 300), (1000, 300), (Int.max, 300),
    ])
    func parkedDomain(failures: Int, seconds: Int) {
        #expect(RetryPolicy.parkedDomain.delay(afterFailures: failures) == .seconds(seconds))
    }

    @Test("a failed item waits 10 s, doubling, at most 1 h", arguments: [
        (1, 10), (2, 20), (3, 40), (6, 320), (9, 2560), (10, 3600), (11, 3600), (500, 3600),
    ])
    func failedItem(failures: Int, seconds: Int) {
        #expect(RetryPolicy.failedItem.delay(afterFailures: failures) == .seconds(seconds))
    }

    @Test("a lower cap (the poll interval) bounds every wait, the first one too", arguments: [
        (60, [5, 10, 20, 40, 60, 60]), (12, [5, 10, 12, 12, 12, 12]), (1, [1, 1, 1, 1, 1, 1]), (3600, [5, 10, 20, 40, 80, 160]),
    ])
    func cappedAtTheLimit(limit: Int, waits: [Int]) {
        let policy = RetryPolicy.parkedDomain.capped(at: .seconds(limit))
        #expect((1...6).map { policy.delay(afterFailures: $0) } == waits.map { .seconds($0) })
    }

    @Test("a cap above the policy's own does not raise it")
    func cappingNeverRaises() {
        #expect(RetryPolicy.parkedDomain.capped(at: .seconds(86_400)) == .parkedDomain)
    }

    @Test("waits of a fraction of a second double exactly")
    func fractions() {
        let policy = RetryPolicy(first: .milliseconds(250), cap: .seconds(4))
        #expect((1...7).map { policy.delay(afterFailures: $0) }
                == [250, 500, 1000, 2000, 4000, 4000, 4000].map { Duration.milliseconds($0) })
    }

    @Test("a zero first wait stays zero")
    func zero() {
        #expect(RetryPolicy(first: .zero, cap: .seconds(10)).delay(afterFailures: 50) == .zero)
    }
}
