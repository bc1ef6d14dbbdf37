import Synchronization

/// How long a request may wait for a connection, and how slow an exchange may become
/// before it is given up (curl's `--connect-timeout`, `--speed-limit` and `--speed-time`).
/// An exchange given up fails with `serverUnreachable`, so the domain parks and retries.
public struct TransferLimits: Sendable, Equatable {
    /// How long opening a connection (TCP and TLS) may take.
    public var connectTimeout: Duration
    /// Bytes per second, both directions counted together, below which an exchange is
    /// too slow; 0 turns the check off.
    public var lowSpeedLimit: Int64
    /// How long an exchange may stay below `lowSpeedLimit` (averaged over this span)
    /// before it is cancelled. Waiting for an answer counts as moving nothing.
    public var lowSpeedTime: Duration

    /// The defaults are those of the configuration file: 15 s, 1 KiB/s, 30 s.
    public init(connectTimeout: Duration = .seconds(15), lowSpeedLimit: Int64 = 1024, lowSpeedTime: Duration = .seconds(30)) {
        self.connectTimeout = connectTimeout
        self.lowSpeedLimit = lowSpeedLimit
        self.lowSpeedTime = lowSpeedTime
    }

    /// True when the low-speed check is on.
    var watchesSpeed: Bool { lowSpeedLimit > 0 && lowSpeedTime > .zero }
}

/// Decides from samples of a byte count whether an exchange is too slow: it is when,
/// after `lowSpeedTime` has passed, fewer than `lowSpeedLimit × lowSpeedTime` bytes moved
/// since the last sample taken at least `lowSpeedTime` ago. Pure: the caller supplies the
/// elapsed time of each sample.
struct LowSpeedWatch {
    let limits: TransferLimits
    /// Samples in time order; the first one is the oldest still needed.
    private var samples: [(elapsed: Duration, total: Int64)] = [(.zero, 0)]

    init(limits: TransferLimits) {
        self.limits = limits
    }

    /// Records that `total` bytes had moved `elapsed` after the start; true when the
    /// exchange is too slow.
    mutating func isTooSlow(total: Int64, elapsed: Duration) -> Bool {
        guard limits.watchesSpeed else { return false }
        samples.append((elapsed, total))
        let windowStart = elapsed - limits.lowSpeedTime
        guard windowStart >= .zero else { return false }
        // Keep the latest sample at or before the window's start, and everything after it.
        while samples.count > 1, samples[1].elapsed <= windowStart { samples.removeFirst() }
        let base = samples[0]
        let span = elapsed - base.elapsed
        let seconds = Double(span.components.seconds) + Double(span.components.attoseconds) / 1e18
        return Double(total - base.total) < Double(limits.lowSpeedLimit) * seconds
    }

    /// The limit in words, for messages: "1 KiB/s for 30 s".
    var description: String {
        let limit = limits.lowSpeedLimit
        let rate = limit % 1024 == 0 ? "\(limit / 1024) KiB/s" : "\(limit) bytes/s"
        return "\(rate) for \(limits.lowSpeedTime.components.seconds) s"
    }
}

/// Counts the bytes an exchange moved, both directions together; read by its watchdog.
final class TransferMeter: Sendable {
    private let total = Atomic<Int64>(0)

    /// Adds `count` bytes sent or received.
    func add(_ count: Int) {
        total.wrappingAdd(Int64(count), ordering: .relaxed)
    }

    /// The bytes moved so far.
    var bytes: Int64 { total.load(ordering: .relaxed) }
}
