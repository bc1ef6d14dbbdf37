import Foundation

/// A counting semaphore for tests that hold a scarce part of the machine for seconds at a
/// time: a live sync loop (an inotify watcher, its reader thread, a debounce timer and
/// passes against a server). Run side by side on every server, forty of them starved each
/// other on two cores until their waits timed out; through `TestSlots.liveLoops` only a
/// few run at once and the rest wait their turn, before their own clocks start.
///
/// A slot is taken with `acquire()` and given back with `release()`, exactly once each;
/// waiters are served first come, first served.
public final class TestSlots: @unchecked Sendable {
    private let lock = NSLock()
    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// A semaphore of `count` slots.
    public init(_ count: Int) { free = count }

    /// Live sync loops running at once in one test process: `TIDESYNC_TEST_LIVE_SLOTS`,
    /// else 4.
    public static let liveLoops = TestSlots(
        ProcessInfo.processInfo.environment["TIDESYNC_TEST_LIVE_SLOTS"].flatMap { Int($0) }.map { max(1, $0) } ?? 4)

    /// Waits until a slot is free and takes it.
    public func acquire() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let now = lock.withLock { () -> Bool in
                if free > 0 {
                    free -= 1
                    return true
                }
                waiting.append(done)
                return false
            }
            if now { done.resume() }
        }
    }

    /// Gives a slot back: to the longest waiter, else to the pool.
    public func release() {
        let next = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            if waiting.isEmpty {
                free += 1
                return nil
            }
            return waiting.removeFirst()
        }
        next?.resume()
    }
}
