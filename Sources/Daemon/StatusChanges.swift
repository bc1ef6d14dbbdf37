import Synchronization

/// "Something a listener shows may have changed", from the domains' monitors and the
/// supervisor to whoever reports status (the service manager's STATUS= line).
///
/// Each listener gets its own stream. Changes coalesce: however many signals arrive while a
/// listener is busy, it sees one element afterwards, so a listener costs nothing while
/// nothing changes and at most one look per burst. Isolation: the listeners are behind one
/// `Mutex`; `signal()` may be called from any thread and never blocks on a listener.
public final class StatusChanges: Sendable {
    private let listeners = Mutex(Listeners())

    private struct Listeners {
        var next = 0
        var byID: [Int: AsyncStream<Void>.Continuation] = [:]
    }

    public init() {}

    /// A stream with one element at once (look at the current state) and one after each
    /// burst of `signal()` calls. It ends when the listening task is cancelled.
    public func stream() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = listeners.withLock { listeners in
            defer { listeners.next += 1 }
            listeners.byID[listeners.next] = continuation
            return listeners.next
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.listeners.withLock { $0.byID.removeValue(forKey: id) }
        }
        continuation.yield()
        return stream
    }

    /// Tells every listener to look again.
    public func signal() {
        for continuation in listeners.withLock({ Array($0.byID.values) }) { continuation.yield() }
    }
}
