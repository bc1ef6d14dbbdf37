import Foundation

/// The engine's port to time, so debounce, backoff and anchors are testable without sleeping.
public protocol SyncClock: Sendable {
    /// The current wall-clock time.
    func now() -> Date
    /// Suspends for `duration` (or returns early when the task is cancelled).
    func sleep(for duration: Duration) async throws
}

/// The real clock.
public struct SystemClock: SyncClock {
    public init() {}
    public func now() -> Date { Date() }
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}
