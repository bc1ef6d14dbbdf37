// A wait with a deadline that returns at the deadline even when the work never ends: a
// task group would wait for its cancelled children, and a fetch that ignores cancellation
// would then hang the reader it was meant to release.
import Foundation

/// Runs work against a deadline.
enum Deadline {
    /// How a run ended.
    enum Outcome: Sendable {
        case finished
        case failed(any Error)
        case timedOut
    }

    /// Runs `work` and returns when it ends or when `timeout` has passed, whichever comes
    /// first; the work is not waited for (nor cancelled) after the deadline.
    static func run(within timeout: Duration, _ work: @escaping @Sendable () async throws -> Void) async -> Outcome {
        let first = FirstOutcome()
        return await withCheckedContinuation { continuation in
            first.continuation = continuation
            let timer = Task(executorPreference: HydrationExecutor.shared) {
                try? await Task.sleep(for: timeout)
                first.resume(.timedOut)
            }
            Task(executorPreference: HydrationExecutor.shared) {
                do {
                    try await work()
                    first.resume(.finished)
                } catch {
                    first.resume(.failed(error))
                }
                timer.cancel()
            }
        }
    }
}

/// Resumes a continuation once, with whichever outcome comes first.
private final class FirstOutcome: @unchecked Sendable {
    private let lock = NSLock()
    private var waiting: CheckedContinuation<Deadline.Outcome, Never>?

    var continuation: CheckedContinuation<Deadline.Outcome, Never>? {
        get { lock.withLock { waiting } }
        set { lock.withLock { waiting = newValue } }
    }

    func resume(_ outcome: Deadline.Outcome) {
        let continuation = lock.withLock {
            let continuation = waiting
            waiting = nil
            return continuation
        }
        continuation?.resume(returning: outcome)
    }
}
