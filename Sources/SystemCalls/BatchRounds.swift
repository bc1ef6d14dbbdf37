import Foundation

/// Jobs done in rounds on one of `OffPool`'s threads: a job submitted while no round runs
/// starts one; jobs submitted while a round runs, or before the next may begin, wait for
/// it, and it takes all of them. So work that costs the same for one job or for many (a
/// file system's sync, a state-DB commit) is paid once a round. A round begins at least
/// `gap` after the one before it ended: a job coming after a quiet spell starts one at
/// once, while a stream of them (a download of many small files, one every few hundred
/// microseconds) is taken a few milliseconds' worth at a time. While rounds keep coming, one
/// of `OffPool`'s threads runs them, the gaps' sleeps included.
public final class BatchRounds<Job: Sendable, Output: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var pending: [(job: Job, reply: CheckedContinuation<Output, Never>)] = []
    private var running = false
    private var rounds = 0
    private var lastEnd: ContinuousClock.Instant?
    private let gap: Duration
    private let round: @Sendable ([Job]) -> [Output]

    /// `round` does a round's jobs and returns one output for each, in their order.
    public init(gap: Duration = .zero, _ round: @escaping @Sendable ([Job]) -> [Output]) {
        self.gap = gap
        self.round = round
    }

    /// How many rounds ran (for tests).
    public var performed: Int { lock.withLock { rounds } }

    /// How many jobs wait for a round to take them (for tests).
    public var waiting: Int { lock.withLock { pending.count } }

    /// Does `job` in the next round to begin, and returns its output.
    public func submit(_ job: Job) async -> Output {
        await withCheckedContinuation { reply in
            lock.lock()
            pending.append((job, reply))
            let start = !running
            running = true
            lock.unlock()
            if start { OffPool.start { self.drain() } }
        }
    }

    /// Runs rounds until none is pending.
    private func drain() {
        while true {
            lock.lock()
            let wait = lastEnd.map { $0 + gap - ContinuousClock.now } ?? .zero
            lock.unlock()
            if wait > .zero {
                Thread.sleep(forTimeInterval: Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18)
            }
            lock.lock()
            let batch = pending
            pending.removeAll(keepingCapacity: true)
            guard !batch.isEmpty else {
                running = false
                return lock.unlock()
            }
            rounds += 1
            lock.unlock()
            let outputs = round(batch.map(\.job))
            precondition(outputs.count == batch.count, "a round returned \(outputs.count) outputs for \(batch.count) jobs")
            lock.withLock { lastEnd = .now }
            for (reply, output) in zip(batch.map(\.reply), outputs) { reply.resume(returning: output) }
        }
    }
}
