/// Deletions a pass holds back until the user confirms them: a side emptied at once (a
/// server folder wiped by another client, a wrong mount, a restored empty backup; a sync
/// folder whose file system is not mounted), or more deletions than the mass-delete guard
/// allows. Pure values; the pass withholds `steps` and reports the hold.
public struct DeletionHold: Sendable, Equatable {
    /// Where the held deletions would be carried out.
    public enum Side: String, Sendable, Codable {
        /// In the sync folder (the server side was emptied).
        case local
        /// On the server (the sync folder was emptied).
        case remote
        /// On both (the mass-delete guard counts either side).
        case both
    }

    /// Why they are held.
    public enum Reason: String, Sendable, Codable {
        /// One side holds nothing while the other still holds synced items.
        case sideEmptied
        /// More than `max_delete` items, or half of the domain.
        case massDelete
    }

    public var reason: Reason
    public var side: Side
    /// Items the held steps delete, counting everything below a deleted folder.
    public var items: Int
    /// The plan's indices of the held steps.
    public var steps: [Int]

    /// What a hold is, without the plan's step indices: what the state DB keeps for
    /// `tidesync status` while the daemon is not running.
    public struct Summary: Sendable, Equatable, Codable {
        public var reason: Reason
        public var side: Side
        public var items: Int

        public init(reason: Reason, side: Side, items: Int) {
            self.reason = reason
            self.side = side
            self.items = items
        }
    }

    /// This hold without its steps.
    public var summary: Summary { Summary(reason: reason, side: side, items: items) }

    public init(reason: Reason, side: Side, items: Int, steps: [Int]) {
        self.reason = reason
        self.side = side
        self.items = items
        self.steps = steps
    }

    /// True when a release the user gave for `released` covers this hold: the same reason
    /// and side, and no more items than the user saw.
    public func isCovered(by released: DeletionHold) -> Bool {
        reason == released.reason && side == released.side && items <= released.items
    }

    /// The hold of a pass that would leave one side empty while the other still holds
    /// synced items, in a domain of any size (as Nextcloud's client asks "all files were
    /// deleted on the server — keep them?"); nil when nothing is to be held.
    ///
    /// - Parameters:
    ///   - plan: the pass's steps.
    ///   - recorded: the state DB's rows by path (the root's included or not).
    ///   - localIsEmpty: the local side, as the pass sees it, was emptied (`emptied`).
    ///   - remoteIsEmpty: the remote side, as the pass sees it, was emptied.
    public static func emptiedSide(_ plan: [SyncAction], recorded: [RemotePath: ItemRecord],
                                   localIsEmpty: Bool, remoteIsEmpty: Bool) -> DeletionHold? {
        guard localIsEmpty != remoteIsEmpty, recorded.keys.contains(where: { !$0.isRoot }) else { return nil }
        let side: Side = remoteIsEmpty ? .local : .remote
        let held = plan.enumerated().filter { _, step in
            switch step {
            case .deleteLocal: side == .local
            case .deleteRemote: side == .remote
            default: false
            }
        }
        guard !held.isEmpty else { return nil }
        let counted = MassDeleteGuard(limit: .max).check(held.map(\.element), recorded: recorded)
        return DeletionHold(reason: .sideEmptied, side: side, items: counted.deletedItems, steps: held.map(\.offset))
    }

    /// True when a side holds none of the recorded items outside `unknown` (folders that
    /// could not be read, taken as recorded): it was emptied, whatever new items it holds
    /// (a server wiped but for a skeleton file, or one new upload from another client).
    /// False when nothing outside `unknown` is recorded. Pure.
    ///
    /// - Parameter present: whether the side holds an item at a recorded path.
    public static func emptied(recorded: [RemotePath: ItemRecord], unknown: UnknownSubtrees,
                               present: (RemotePath) -> Bool) -> Bool {
        var counted = false
        for path in recorded.keys where !path.isRoot && !unknown.contains(path) {
            if present(path) { return false }
            counted = true
        }
        return counted
    }

    /// The hold of the mass-delete guard's verdict, when it exceeded its limits.
    public static func massDelete(_ verdict: MassDeleteGuard.Verdict, plan: [SyncAction]) -> DeletionHold? {
        guard verdict.exceeded else { return nil }
        let local = verdict.steps.contains { if case .deleteLocal = plan[$0] { true } else { false } }
        let remote = verdict.steps.contains { if case .deleteRemote = plan[$0] { true } else { false } }
        let side: Side = local && remote ? .both : local ? .local : .remote
        return DeletionHold(reason: .massDelete, side: side, items: verdict.deletedItems, steps: verdict.steps)
    }
}
