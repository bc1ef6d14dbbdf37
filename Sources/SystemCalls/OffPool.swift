import Foundation
import Glibc

/// Calls that hold a thread for a disk's time (an fsync waits for the device, a state-DB
/// commit for its fsync), made on threads of their own instead of Swift's cooperative
/// threads, of which there are as many as cores: on a 2-core machine two downloads waiting
/// in fsync stopped every other transfer and every other fsync that could have shared their
/// journal commit (a 10 000-file download with `transfers` 4, 8 or 16 took the same time).
/// Not a dispatch queue: on Linux a concurrent queue of one's own draws on the same
/// CPU-wide pool as Swift's executor, which grows by one thread a second at most.
public enum OffPool {
    /// At most this many threads, made when a call finds none idle; idle ones wait on a
    /// condition without waking. More calls than that wait in order (a domain's `transfers`
    /// plus the downloads finishing beside them may exceed it, and every domain shares the
    /// pool); none waits for another queued call, so they only wait longer.
    static let limit = 32
    private static let threads = Workers(limit: limit)

    /// Runs `body` on one of the pool's threads and returns what it returned, or throws what
    /// it threw. It runs to its end even when the calling task is cancelled.
    public static func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            threads.submit { continuation.resume(returning: Result { () throws(E) -> T in try body() }) }
        }
        return try result.get()
    }

    /// Starts `body` on one of the pool's threads and returns at once.
    public static func start(_ body: @escaping @Sendable () -> Void) {
        threads.submit(body)
    }

    /// `fsync(fd)` off the cooperative threads: 0, or the errno it failed with. The caller
    /// keeps `fd` open until this returns.
    public static func fsync(_ fd: Int32) async -> Int32 {
        await run { Glibc.fsync(fd) == 0 ? 0 : errno }
    }

    /// Threads taking jobs in the order they came.
    private final class Workers: @unchecked Sendable {
        private let condition = NSCondition()
        private var jobs: [(@Sendable () -> Void)?] = []  // taken ones are nil
        private var next = 0  // index of the next job in `jobs`
        private var idle = 0
        private var started = 0
        private let limit: Int

        init(limit: Int) { self.limit = limit }

        func submit(_ job: @escaping @Sendable () -> Void) {
            condition.lock()
            defer { condition.unlock() }
            jobs.append(job)
            // A thread for each job waiting, as long as the limit allows: an idle thread
            // signalled but not yet awake still counts as idle until it takes its job.
            guard jobs.count - next > idle, started < limit else { return condition.signal() }
            started += 1
            let thread = Thread { [self] in work() }
            thread.name = "tidesync-block"  // Linux keeps 15 bytes of a thread's name
            thread.start()
        }

        private func work() {
            condition.lock()
            while true {
                while next == jobs.count {
                    idle += 1
                    condition.wait()
                    idle -= 1
                }
                let job = jobs[next]!
                jobs[next] = nil  // what it holds goes when it is done, not when the queue drains
                next += 1
                if next == jobs.count {
                    jobs.removeAll(keepingCapacity: true)
                    next = 0
                } else if next > 64 && next > jobs.count / 2 {
                    jobs.removeFirst(next)
                    next = 0
                }
                condition.unlock()
                job()
                condition.lock()
            }
        }
    }
}
