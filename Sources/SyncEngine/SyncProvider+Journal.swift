import Foundation

/// The engine's journal over its state store (durability: each verb is one transaction).
extension SyncProvider: OperationJournal {
    public func journal(_ operations: [PendingOperation]) throws(ProviderError) -> [Int64] {
        try state.journal(operations)
    }

    public func pendingOperations() throws(ProviderError) -> [PendingOperation] {
        try state.pendingOperations()
    }

    public func complete(_ operations: [Int64]) throws(ProviderError) {
        try state.apply(operations.map(StateChange.completeOperation))
    }

    public func booking(of error: ProviderError, operation: Int64?, earlier: PendingOperation?,
                        keepingEntry: Bool) -> FailureBooking {
        FailureBooking(error, operation: operation, earlier: earlier, keepingEntry: keepingEntry, now: clock.now())
    }

    public func record(_ booking: FailureBooking) throws(ProviderError) {
        try state.apply(booking.changes)
    }

    public func recordConflict(_ conflict: ConflictRecord) throws(ProviderError) {
        try state.apply([.recordConflict(conflict)])
    }
}
