/// How long to wait before trying again after failures in a row: `first` after one
/// failure, twice as long after each further one, never longer than `cap`. Pure: the
/// caller counts the failures and owns the clock.
///
/// One policy for every retry in tidesync: a parked domain (the domain loop, and the
/// supervisor while a domain cannot be opened) and an item whose step failed (its
/// journal entry's `not_before`).
public struct RetryPolicy: Sendable, Equatable {
    /// The wait after the first failure.
    public var first: Duration
    /// The longest wait, however many failures came before.
    public var cap: Duration

    public init(first: Duration, cap: Duration) {
        self.first = first
        self.cap = cap
    }

    /// A domain that cannot sync (server unreachable, not authenticated, disk full, the
    /// sync folder missing): 5 s, doubling, at most 5 min.
    public static let parkedDomain = RetryPolicy(first: .seconds(5), cap: .seconds(300))

    /// An item whose step failed: 10 s, doubling, at most 1 h.
    public static let failedItem = RetryPolicy(first: .seconds(10), cap: .seconds(3600))

    /// The wait after `failures` failures in a row (fewer than one counts as one).
    public func delay(afterFailures failures: Int) -> Duration {
        var delay = first
        var doublings = max(failures, 1) - 1
        // Stops at the cap, so any count of failures is safe from overflow.
        while doublings > 0 && delay < cap && delay > .zero {
            delay *= 2
            doublings -= 1
        }
        return min(delay, cap)
    }

    /// The same policy with its cap lowered to `limit` when that is shorter.
    public func capped(at limit: Duration) -> RetryPolicy {
        RetryPolicy(first: first, cap: min(cap, limit))
    }
}
