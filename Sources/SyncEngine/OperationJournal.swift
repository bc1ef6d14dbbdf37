import Foundation

/// The journal of operations, as the replica uses it (STYLE.md §9: the engine owns the
/// journal; the replica never reaches into the state DB). One answer to "where is an
/// upload journaled?" and "what retries it?": here, and `FailureBooking`.
///
/// Contract:
/// - `journal` is durable before it returns: an operation is journaled before it starts.
/// - An entry leaves the journal in the transaction that records its result (the engine's
///   write verbs take its id), by `complete`, or stays with a backoff (`record(_:)`).
/// - After a crash, `pendingOperations` is what was cut short or is backing off.
/// - Errors are `ProviderError`s (`localDiskFull` on ENOSPC, `cannotSynchronize` otherwise).
public protocol OperationJournal: Sendable {
    /// Writes every operation to the journal in one transaction (one fsync for a whole
    /// plan) and returns their ids, in order; the operations' own `id`s are ignored.
    func journal(_ operations: [PendingOperation]) throws(ProviderError) -> [Int64]

    /// The journal, oldest first: operations cut short, and failed ones with their backoff.
    func pendingOperations() throws(ProviderError) -> [PendingOperation]

    /// Removes the entries (the operations are over, or never started), in one transaction.
    func complete(_ operations: [Int64]) throws(ProviderError)

    /// What becomes of `operation`, which failed with `error`, decided at the engine's
    /// clock (see `FailureBooking`). Nothing is written until `record(_:)`.
    func booking(of error: ProviderError, operation: Int64?, earlier: PendingOperation?,
                 keepingEntry: Bool) -> FailureBooking

    /// Writes `booking` in one transaction.
    func record(_ booking: FailureBooking) throws(ProviderError)

    /// Adds a conflict copy to the list of conflicts (`tidesync conflicts`).
    func recordConflict(_ conflict: ConflictRecord) throws(ProviderError)
}
