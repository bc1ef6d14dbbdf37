import Foundation

/// Tells a running plan to start no new step; running ones finish.
public final class StopFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var stopped = false
    private var handlers: [@Sendable () -> Void] = []
    public init() {}
    public var isStopped: Bool { lock.withLock { stopped } }
    public func stop() {
        let run = lock.withLock { () -> [@Sendable () -> Void] in
            stopped = true
            defer { handlers = [] }
            return handlers
        }
        for handler in run { handler() }
    }

    /// Runs `handler` when the flag is set (at once if it is set already).
    public func onStop(_ handler: @escaping @Sendable () -> Void) {
        let now = lock.withLock { () -> Bool in
            if !stopped { handlers.append(handler) }
            return stopped
        }
        if now { handler() }
    }

}
