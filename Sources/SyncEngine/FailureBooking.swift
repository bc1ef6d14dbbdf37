import Foundation

/// What the journal does with a step that failed, decided from the error's disposition.
/// Pure: the instant is given, nothing is written (`OperationJournal.record(_:)` does).
///
/// - `parkDomain` (the domain parks) and `resolve` (the next plan decides again): the
///   entry goes.
/// - `retry` and `skipItem`: the item backs off by `RetryPolicy.failedItem`. One entry per
///   item in error: an `earlier` failure of the same item carries the attempt count, and
///   this step's own entry goes.
///
/// An entry that must outlive the failure (`keepingEntry`: it names remote scratch
/// collections that only the recovery cleans up) is never removed here.
public struct FailureBooking: Sendable, Equatable {
    /// What became of the failed operation.
    public enum Outcome: Sendable, Equatable {
        /// Not an item in error: its entry goes (unless kept).
        case dropped
        /// Failure number `attempt` of the item; not tried again before `notBefore`, which
        /// is `delay` after the instant the booking was made.
        case backedOff(attempt: Int, delay: Duration, notBefore: Date)
    }

    /// What became of the failed operation.
    public let outcome: Outcome
    /// The journal changes, applied in one transaction.
    let changes: [StateChange]

    /// - Parameters:
    ///   - operation: the failed step's journal entry; nil when it had none.
    ///   - earlier: the journal entry of an earlier failure of the same item, if any.
    ///   - keepingEntry: true when `operation` must stay in the journal whatever happens.
    ///   - now: the instant the backoff counts from.
    public init(_ error: ProviderError, operation: Int64?, earlier: PendingOperation?, keepingEntry: Bool,
                now: Date, policy: RetryPolicy = .failedItem) {
        let removable = keepingEntry ? nil : operation
        switch error.disposition {
        case .parkDomain, .resolve:
            outcome = .dropped
            changes = removable.map { [.completeOperation($0)] } ?? []
        case .retry, .skipItem:
            let attempt = (earlier?.attempts ?? 0) + 1
            let delay = policy.delay(afterFailures: attempt)
            let notBefore = now.addingTimeInterval(delay / .seconds(1))
            outcome = .backedOff(attempt: attempt, delay: delay, notBefore: notBefore)
            changes = Self.backoff(error, operation: operation, removable: removable, earlier: earlier, until: notBefore)
        }
    }

    /// The changes that count the failure on the item's one entry.
    private static func backoff(_ error: ProviderError, operation: Int64?, removable: Int64?, earlier: PendingOperation?,
                                until notBefore: Date) -> [StateChange] {
        if let earlier {
            let fail = StateChange.failOperation(earlier.id, error: error.description, notBefore: notBefore)
            return [fail] + (removable.map { [.completeOperation($0)] } ?? [])
        }
        return operation.map { [.failOperation($0, error: error.description, notBefore: notBefore)] } ?? []
    }
}
