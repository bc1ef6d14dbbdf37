import SyncEngine

/// What one pass of the runner saw and did.
public struct RunReport: Sendable {
    public var succeeded = 0
    /// Steps that failed, with why; retried after a backoff (or decided again next pass).
    public var failed: [(path: RemotePath, error: ProviderError)] = []
    /// Steps not run because a step they needed failed, or the run stopped.
    public var skipped = 0
    /// Set when a failure parks the whole domain (server unreachable, auth, quota, disk full).
    public var parked: ProviderError?
    /// Steps whose guard found the other side changed (a conflict, a taken name, a rejected
    /// delete): not errors, but the next plan must look at both sides again to keep both.
    public var resolved = 0
    /// Conflict copies made: (original, copy).
    public var conflicts: [(original: RemotePath, copy: RemotePath)] = []
    /// True when every one of `steps` steps succeeded: both sides agree by construction, so
    /// no confirming pass is needed. (A step that leaves work for the next plan, such as a
    /// folder delete that kept new items, does not count as succeeded.)
    public func completes(_ steps: Int) -> Bool {
        succeeded == steps && failed.isEmpty && skipped == 0 && parked == nil
    }

    public init() {}
}
