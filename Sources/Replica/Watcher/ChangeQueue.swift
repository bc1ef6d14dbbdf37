import Foundation
import SyncEngine

/// A wake-up signal for one waiting loop: `signal()` ends the current or the next
/// `wait`. Signals coalesce; a spurious wake-up is allowed (the loop looks again).
public final class Wakeup: @unchecked Sendable {
    private let lock = NSLock()
    private var pending = false
    private var waiter: CheckedContinuation<Void, Never>?

    public init() {}

    public func signal() {
        let waiter = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            defer { self.waiter = nil }
            if self.waiter == nil { pending = true }
            return self.waiter
        }
        waiter?.resume()
    }

    /// The queue the deadline timers fire on.
    private static let timers = DispatchQueue(label: "tidesync.wakeup")

    /// Returns when signalled, or at `deadline` (nil: only when signalled). The deadline is
    /// a dispatch timer, not a `Task.sleep`: on Linux a pending `Task.sleep` makes
    /// libdispatch wake once a second for as long as it waits, which an idle daemon
    /// waiting an hour should not.
    public func wait(until deadline: ContinuousClock.Instant?) async {
        if lock.withLock({ () -> Bool in defer { pending = false }; return pending }) { return }
        var timer: DispatchSourceTimer?
        if let deadline {
            let delay = ContinuousClock.now.duration(to: deadline)
            guard delay > .zero else { return }
            let (seconds, attoseconds) = delay.components
            let source = DispatchSource.makeTimerSource(queue: Self.timers)
            source.schedule(deadline: .now() + .nanoseconds(Int(min(seconds, 1 << 30) * 1_000_000_000 + attoseconds / 1_000_000_000)),
                            leeway: .milliseconds(5))
            source.setEventHandler { [weak self] in self?.signal() }
            source.resume()
            timer = source
        }
        await withCheckedContinuation { continuation in
            let now = lock.withLock { () -> Bool in
                if pending {
                    pending = false
                    return true
                }
                waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
        timer?.cancel()
    }
}

/// Where the watcher's thread leaves events and the domain's loop takes settled paths:
/// a `ChangeAggregator` behind a lock, and a `Wakeup` for the loop.
public final class ChangeQueue: @unchecked Sendable {
    private let lock = NSLock()
    private var aggregator: ChangeAggregator
    /// Why the sync folder is gone, once the watcher said so.
    private var rootGone: String?
    private var unwatched: [RemotePath: Int32] = [:]
    private var overflows = 0
    public let wakeup = Wakeup()

    public init(debounce: Duration, cap: Duration) {
        aggregator = ChangeAggregator(debounce: debounce, cap: cap)
    }

    /// Takes a batch of events from the watcher.
    public func add(_ events: [WatchEvent]) {
        let now = ContinuousClock.now
        lock.withLock {
            for event in events {
                switch event {
                case .rootGone(let why): rootGone = rootGone ?? why
                case .unwatched(let path, let code): unwatched[path] = code
                case .overflow: overflows += 1
                default: break
                }
                aggregator.add(event, at: now)
            }
        }
        wakeup.signal()
    }

    public func putBack(_ paths: [RemotePath: Bool], firstSeen: ContinuousClock.Instant) {
        lock.withLock { aggregator.putBack(paths, firstSeen: firstSeen, at: .now) }
    }

    public func requestFullScan() {
        lock.withLock { aggregator.requestFullScan(at: .now) }
        wakeup.signal()
    }

    public func deadline() -> ContinuousClock.Instant? { lock.withLock { aggregator.deadline() } }

    public func takeDue() -> (changes: SettledChanges, firstSeen: ContinuousClock.Instant?) {
        lock.withLock { aggregator.takeDue(at: .now) }
    }

    /// Everything waiting, due or not (a full scan is about to look at it all).
    public func takeAll() -> (changes: SettledChanges, firstSeen: ContinuousClock.Instant?) {
        lock.withLock { aggregator.takeAll() }
    }

    /// How many paths wait to settle.
    public var waiting: Int { lock.withLock { aggregator.count } }
    /// How many times events were lost since the start.
    public var overflowCount: Int { lock.withLock { overflows } }

    /// The reason the sync folder is gone, if the watcher reported it; cleared by taking it.
    public func takeRootGone() -> String? {
        lock.withLock { defer { rootGone = nil }; return rootGone }
    }

    /// The folders that could not be watched (with the errno), taken for a retry.
    public func takeUnwatched() -> [RemotePath: Int32] {
        lock.withLock { defer { unwatched = [:] }; return unwatched }
    }
}
