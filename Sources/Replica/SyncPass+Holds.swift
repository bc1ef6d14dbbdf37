import Foundation
import SyncEngine
import Synchronization

/// The user's confirmation of held deletions, shared by a domain's passes and its control
/// commands (`tidesync allow-deletions`).
///
/// Isolation: one `Mutex` over the current hold and the release. A release covers the hold
/// that was current when it was given, once: the next pass whose hold it covers (same reason
/// and side, no more items) carries the deletions out; a pass with another hold (more
/// items, the other side) holds again and drops the release, so the user confirms what
/// they saw and nothing more.
public final class DeletionRelease: Sendable {
    private struct Record {
        var current: DeletionHold?
        var released: DeletionHold?
    }

    private let state = Mutex(Record())

    public init() {}

    /// The hold of the last pass; nil when it held nothing.
    public var current: DeletionHold? { state.withLock { $0.current } }

    /// Releases the current hold once; returns it, or nil when nothing is held.
    @discardableResult
    public func release() -> DeletionHold? {
        state.withLock { record in
            record.released = record.current
            return record.current
        }
    }

    /// Called by the pass with the hold it would make: true when a release covers it (the
    /// release is used up). Either way the release is gone afterwards and `current` is the
    /// hold that stands (nil when released).
    func admits(_ hold: DeletionHold?) -> Bool {
        state.withLock { record in
            let released = record.released
            record.released = nil
            guard let hold else {
                record.current = nil
                return false
            }
            if let released, hold.isCovered(by: released) {
                record.current = nil
                return true
            }
            record.current = hold
            return false
        }
    }
}

extension SyncPass {
    /// The deletions of `plan` this pass holds back, with the error that parks the domain
    /// until the user confirms them; nil when nothing is held (no guard, nothing to hold,
    /// or the user released this hold).
    ///
    /// A side counts as emptied when none of the recorded items outside `unknown` is still
    /// there: folders that could not be read are taken as recorded on both sides, so they
    /// must not make an emptied side look full.
    /// Keeps what this pass held back in the state DB, for `status` while the daemon is not
    /// running; a failure there costs only that report.
    func record(held: DeletionHold?) {
        do { try runner.provider.recordHeldDeletions(held) } catch {
            logger.warning("cannot record the held deletions for status: \(error.message)")
        }
    }

    /// `total` is the domain's row count when `recorded` is only the rows a watched pass
    /// read: the others are on both sides as recorded, so neither side is emptied.
    func hold(_ plan: [SyncAction], local: [RemotePath: LocalObservation], remote: [RemotePath: RemoteEntry],
              recorded: [RemotePath: ItemRecord], total: Int? = nil,
              unknown: UnknownSubtrees) -> (hold: DeletionHold, error: ProviderError)? {
        guard let massDelete else { return nil }
        let partial = total != nil
        let localEmptied = !partial && DeletionHold.emptied(recorded: recorded, unknown: unknown) { local[$0] != nil }
        let remoteEmptied = !partial && DeletionHold.emptied(recorded: recorded, unknown: unknown) { remote[$0] != nil }
        let hold = DeletionHold.emptiedSide(plan, recorded: recorded, localIsEmpty: localEmptied, remoteIsEmpty: remoteEmptied)
            ?? DeletionHold.massDelete(massDelete.check(plan, recorded: recorded, total: total), plan: plan)
        if release.admits(hold), let hold {
            logger.notice("carrying out \(hold.items) held deletion(s) \(Self.place(of: hold.side)), as the user confirmed")
            return nil
        }
        guard let hold else { return nil }
        return (hold, ProviderError(.massDeletePaused, message(for: hold, limit: massDelete.limit)))
    }

    /// What the user reads in the log, `run --once` and `status`.
    func message(for hold: DeletionHold, limit: Int) -> String {
        let domain = remote.map { " \($0.domain)" } ?? ""
        let release = "run `tidesync allow-deletions\(domain)` (the daemon runs) or `tidesync run --once --allow-mass-delete`"
        switch (hold.reason, hold.side) {
        case (.sideEmptied, .local):
            return "the server's folder is empty, but \(hold.items) synced item(s) are still in \(scanner.root); deleting them here is held back. If the server was emptied on purpose, \(release); otherwise put the files back on the server (or point the domain at the right folder)"
        case (.sideEmptied, _):
            return "the sync folder \(scanner.root) is empty, but \(hold.items) synced item(s) are still on the server; deleting them there is held back. If it is a mount point, mount it again; if you emptied it on purpose, \(release)"
        case (.massDelete, _):
            return "this pass would delete \(hold.items) items \(Self.place(of: hold.side)) (more than max_delete = \(limit), or half of the domain); deletions are held back. If that is what you want, \(release); otherwise put the files back"
        }
    }

    static func place(of side: DeletionHold.Side) -> String {
        switch side {
        case .local: "in the sync folder"
        case .remote: "on the server"
        case .both: "on both sides"
        }
    }
}
