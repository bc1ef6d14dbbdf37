/// Holds back a plan's deletions when they would remove more than a domain allows without
/// confirmation: a server folder emptied by mistake, a wrong URL, or a disk that lost its
/// files must not be mirrored to the other side in one pass. Pure; the pass withholds the
/// steps it names.
public struct MassDeleteGuard: Sendable {
    /// The most items one pass may delete (`max_delete`).
    public var limit: Int
    /// A pass that deletes more than this share of the domain's items (and at least
    /// `minimumForShare` of them) is held back too.
    public var share: Double = 0.5
    public var minimumForShare = 50

    public init(limit: Int) { self.limit = limit }

    /// What the guard decided about a plan.
    public struct Verdict: Sendable, Equatable {
        /// Items the plan deletes, counting everything below a deleted folder.
        public var deletedItems: Int
        /// The plan's deletion steps, to withhold when `exceeded`.
        public var steps: [Int]
        public var exceeded: Bool
    }

    /// Counts what `plan` deletes on either side among `recorded` (the state DB's rows by path).
    /// `total` is the domain's row count when `recorded` holds only some of them (a watched
    /// pass reads only the rows around what changed); nil: `recorded` is every row.
    public func check(_ plan: [SyncAction], recorded: [RemotePath: ItemRecord], total: Int? = nil) -> Verdict {
        var below: [RemotePath: Int] = [:]
        for path in recorded.keys {
            for ancestor in path.ancestors { below[ancestor, default: 0] += 1 }
        }
        var deleted = 0
        var steps: [Int] = []
        for (index, step) in plan.enumerated() {
            switch step {
            case .deleteLocal(let path, _, _), .deleteRemote(let path, _, _):
                steps.append(index)
                deleted += 1 + (below[path] ?? 0)
            default:
                continue
            }
        }
        let total = max(total ?? recorded.count, 1)
        let exceeded = deleted > limit || (deleted >= minimumForShare && Double(deleted) > share * Double(total))
        return Verdict(deletedItems: deleted, steps: steps, exceeded: exceeded)
    }
}
