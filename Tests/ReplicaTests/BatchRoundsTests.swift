import Foundation
import Synchronization
import SystemCalls
import Testing

/// Jobs that come while a round runs are done together in the next one, each gets its own
/// output, and rounds keep their gap (the placements and records of downloads, issue 16).
@Suite("Batch rounds", .timeLimit(.minutes(1)))
struct BatchRoundsTests {
    @Test("jobs submitted while a round runs share the next round; each gets its own output")
    func sharedRound() async throws {
        let batches = Mutex<[[Int]]>([])
        let others = 6
        // The first round holds until every other job waits, so they all share the second.
        let holdFirst = Mutex(true)
        let rounds = BatchRounds<Int, Int> { jobs in
            batches.withLock { $0.append(jobs) }
            while holdFirst.withLock({ $0 }) { usleep(1000) }
            return jobs.map { $0 * 10 }
        }
        let first = Task { await rounds.submit(0) }
        while batches.withLock({ $0.isEmpty }) { await Task.yield(); usleep(1000) }
        let rest = (1...others).map { job in Task { await rounds.submit(job) } }
        while rounds.waiting < others { await Task.yield(); usleep(1000) }
        holdFirst.withLock { $0 = false }
        #expect(await first.value == 0)
        for (index, task) in rest.enumerated() { #expect(await task.value == (index + 1) * 10) }
        let seen = batches.withLock { $0 }
        #expect(seen.count == 2 && seen[0] == [0] && Set(seen[1]) == Set(1...others), "\(seen)")
        #expect(rounds.performed == 2)
    }

    @Test("a round begins no sooner than the gap after the one before it ended")
    func gap() async throws {
        let gap = Duration.milliseconds(50)
        let times = Mutex<[(start: ContinuousClock.Instant, end: ContinuousClock.Instant)]>([])
        let holdFirst = Mutex(true)
        let rounds = BatchRounds<Int, Int>(gap: gap) { jobs in
            let start = ContinuousClock.now
            while holdFirst.withLock({ $0 }) { usleep(1000) }
            times.withLock { $0.append((start, .now)) }
            return jobs
        }
        let first = Task { await rounds.submit(1) }
        let second = Task {
            while rounds.performed == 0 { await Task.yield(); usleep(1000) }
            return await rounds.submit(2)
        }
        while rounds.waiting == 0 { await Task.yield(); usleep(1000) }
        holdFirst.withLock { $0 = false }
        #expect(await first.value == 1)
        #expect(await second.value == 2)
        let seen = times.withLock { $0 }
        #expect(seen.count == 2)
        if seen.count == 2 { #expect(seen[1].start - seen[0].end >= gap, "the second round began \(seen[1].start - seen[0].end) after the first ended") }
        #expect(await rounds.submit(3) == 3)
        #expect(rounds.performed == 3)
    }
}
