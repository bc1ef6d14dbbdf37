// The threads a hydration's tasks run on. A reader blocked in the kernel waits for them, so
// they must not wait their turn behind the daemon's other work on Swift's cooperative
// threads (two on a two-core machine): the test suite, with hundreds of tests ready at
// once, kept a stalled fetch's 1 s deadline from firing for over a minute.
import Foundation

/// A task executor of its own threads, for the hydrator's tasks (`Task(executorPreference:)`).
final class HydrationExecutor: TaskExecutor, @unchecked Sendable {
    /// The one every hydrator in the process uses.
    static let shared = HydrationExecutor(threads: 2)

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    private init(threads: Int) {
        for index in 0..<threads {
            let thread = Thread { [unowned self] in self.work() }
            thread.name = "tidesync hydration \(index)"
            thread.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.withLock {
            jobs.append(job)
            condition.signal()
        }
    }

    private func work() {
        while true {
            let job = condition.withLock { () -> UnownedJob in
                while jobs.isEmpty { condition.wait() }
                return jobs.removeFirst()
            }
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
