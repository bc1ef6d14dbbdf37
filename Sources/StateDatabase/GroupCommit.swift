// Group commit (issue 16 item 4): `apply` calls made at the same time share one write
// transaction, so one WAL sync (and one write of each page they share, a folder's index
// page) serves them all. Steps finish many at once (PlanRunner.finishing), each recording its
// result in its own transaction, which also completes its journal entry (downloads record a
// round of files in one, `SyncProvider.record(_:)`), and each used to wait for its own
// commit's fsync.
//
// Leader and followers: a call queues its changes; the first caller that finds no commit
// running takes every queued call into one transaction, commits, and wakes the others; calls
// queued meanwhile go in the next one. A call returns only once the transaction that holds its
// changes committed. When a shared transaction fails (one member's change is refused: a name
// already used, a cycle), nothing of it stays, and each member is applied again in a
// transaction of its own, so a member fails only for its own changes.

import Foundation
import SyncEngine

/// Queues concurrent `apply` calls into shared transactions.
final class GroupCommit: @unchecked Sendable {
    /// One call's changes, and what became of them (set and read under the lock only).
    private final class Member {
        let changes: [StateChange]
        var outcome: Result<Void, ProviderError>?
        init(_ changes: [StateChange]) { self.changes = changes }
    }

    private let condition = NSCondition()
    private var queued: [Member] = []
    private var committing = false

    /// How many calls wait for the next transaction (for tests).
    var waiting: Int { condition.withLock { queued.count } }

    /// Applies `changes` with `commit`, which gets the changes of every call queued at that
    /// moment and returns each one's outcome, in order; returns once this call's is known.
    func apply(_ changes: [StateChange],
               commit: ([[StateChange]]) -> [Result<Void, ProviderError>]) throws(ProviderError) {
        let member = Member(changes)
        condition.lock()
        queued.append(member)
        while member.outcome == nil {
            guard !committing else {
                condition.wait()
                continue
            }
            committing = true
            let batch = queued
            queued.removeAll()
            condition.unlock()
            let outcomes = commit(batch.map(\.changes))
            precondition(outcomes.count == batch.count, "a group commit returned \(outcomes.count) outcomes for \(batch.count) calls")
            condition.lock()
            for (member, outcome) in zip(batch, outcomes) { member.outcome = outcome }
            committing = false
            condition.broadcast()
        }
        let outcome = member.outcome!
        condition.unlock()
        try outcome.get()
    }
}
