import Dispatch
import Glibc

/// Calls that hold a thread for a disk's time (an fsync waits for the device), made on
/// threads of their own instead of one of Swift's cooperative threads, of which there are
/// as many as cores: on a 2-core machine two downloads waiting in fsync stopped every other
/// transfer and every other fsync that could have shared their journal commit (a 10 000-file
/// download with `transfers` 4, 8 or 16 took the same time).
public enum OffPool {
    /// Concurrent: on Linux a queue of one's own draws threads from dispatch's overcommit
    /// pool, which adds one for each item that blocks. Callers bound how many run at once
    /// (a domain's `transfers`).
    private static let queue = DispatchQueue(label: "tidesync.blocking-calls", attributes: .concurrent)

    /// Runs `body` on a thread of the queue and returns what it returned, or throws what it
    /// threw. It runs to its end even when the calling task is cancelled.
    public static func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: Result { () throws(E) -> T in try body() }) }
        }
        return try result.get()
    }

    /// `fsync(fd)` off the cooperative threads: 0, or the errno it failed with. The caller
    /// keeps `fd` open until this returns.
    public static func fsync(_ fd: Int32) async -> Int32 {
        await run { Glibc.fsync(fd) == 0 ? 0 : errno }
    }
}
