import Foundation

/// One reconciliation in progress: the inputs, where everything is and ends up, and the
/// verdict per record. `run()` turns them into the plan.
struct Planner {
    let tree: BaseTree
    let local: [RemotePath: LocalObservation]
    let remote: [RemotePath: RemoteEntry]
    let now: Date
    let host: String
    let timeZone: TimeZone
    var layout: Layout
    /// The verdict per record index.
    var verdicts: [Verdict] = []
    /// What each side holds of each record, at its current place (nil: absent there).
    private(set) var seenLocal: [LocalObservation?] = []
    private(set) var seenRemote: [RemoteEntry?] = []
    /// Each side's moves, played in an order that works.
    var localMoves: MoveSchedule?
    var remoteMoves: MoveSchedule?
    /// Paths of items no record accounts for, sorted.
    let newLocal: [RemotePath]
    let newRemote: [RemotePath]
    /// Names taken in each folder, on either side, for conflict-copy names; built when
    /// the first one is needed.
    var names: [RemotePath: Set<String>]?

    init(tree: BaseTree, local: [RemotePath: LocalObservation], remote: [RemotePath: RemoteEntry],
         now: Date, host: String, timeZone: TimeZone) {
        let local = local.filter { !$0.key.isRoot }
        let remote = remote.filter { !$0.key.isRoot }
        let localPlacement = Placement(tree: tree, located: Placement.locatedLocally(tree, local)) { record, path in
            local[path]?.kind == record.kind
        }
        let remotePlacement = Placement(tree: tree, located: Placement.locatedRemotely(tree, remote)) { record, path in
            remote[path].map { Placement.compatible(record.kind, remoteKind: $0.kind) } ?? false
        }
        (self.tree, self.local, self.remote) = (tree, local, remote)
        (self.now, self.host, self.timeZone) = (now, host, timeZone)
        layout = Layout(tree: tree, local: localPlacement, remote: remotePlacement)
        // A bundle is one item: what lies inside it is the bundle's business, not ours.
        let bundles = Set(local.filter { $0.value.kind == .bundle }.map(\.key)
            + tree.indices.filter { tree[$0].kind == .bundle }.flatMap { [localPlacement.now[$0], remotePlacement.now[$0]] })
        let claimedLocal = Set(tree.indices.filter { localPlacement.present[$0] }.map { localPlacement.now[$0] })
        let claimedRemote = Set(tree.indices.filter { remotePlacement.present[$0] }.map { remotePlacement.now[$0] })
        func isNew(_ path: RemotePath, _ claimed: Set<RemotePath>) -> Bool {
            !claimed.contains(path) && (bundles.isEmpty || !path.ancestors.contains(where: bundles.contains))
        }
        newLocal = local.keys.filter { isNew($0, claimedLocal) }.sorted(by: RemotePath.precedes)
        newRemote = remote.keys.filter { isNew($0, claimedRemote) }.sorted(by: RemotePath.precedes)
        seenLocal = tree.indices.map { localPlacement.present[$0] ? local[localPlacement.now[$0]] : nil }
        seenRemote = tree.indices.map { remotePlacement.present[$0] ? remote[remotePlacement.now[$0]] : nil }
        verdicts = tree.indices.map(verdict)
    }

    /// The plan, in an executable order.
    mutating func run() -> [SyncAction] {
        resolveCollisions()
        keepFoldersWithSurvivors()
        scheduleMoves()
        var actions: [SyncAction] = []
        for index in tree.indices { actions += recordActions(index) }
        actions += newItemActions()
        return ActionOrder.sorted(subsumed(actions))
    }

    // MARK: Per record

    func verdict(_ index: Int) -> Verdict {
        let record = tree[index]
        let l = SideChange.local(record, seen: seenLocal[index], moved: layout.local.moved[index])
        let r = SideChange.remote(record, seen: seenRemote[index], moved: layout.remote.moved[index])
        return Verdict.decide(folder: record.kind == .folder, local: l, remote: r)
    }

    /// Plays both sides' moves; a cycle of renames (a swap) gives one item a conflict-copy
    /// name instead, which breaks the cycle, and the moves are played again.
    mutating func scheduleMoves() {
        for _ in 0..<8 {
            let stays = tree.indices.map { !verdicts[$0].removes }
            let remote = MoveSchedule(tree: tree, side: layout.remote, final: layout.final,
                                      moving: tree.indices.map { stays[$0] && layout.remote.present[$0] })
            let local = MoveSchedule(tree: tree, side: layout.local, final: layout.final,
                                     moving: tree.indices.map { stays[$0] && layout.local.present[$0] && !copiesDirectly($0) })
            (remoteMoves, localMoves) = (remote, local)
            guard let stuck = (remote.stuck + local.stuck).first else { return }
            layout.recordOverrides[stuck] = copyPath(for: layout.final[stuck])
            layout.resolve()
        }
    }

    /// True for a conflict whose local version goes straight to a conflict copy, so it
    /// does not move to the final place first.
    func copiesDirectly(_ index: Int) -> Bool {
        guard verdicts[index] == .conflict, let seenLocal = seenLocal[index], let seenRemote = seenRemote[index] else {
            return false
        }
        return conflictOutcome(tree[index].kind, seenLocal, seenRemote) == .copy
    }

    /// The actions for one record: its moves on each side (to its final place), then its
    /// content rule; or a single deletion or row removal.
    mutating func recordActions(_ index: Int) -> [SyncAction] {
        if let removal = removal(index) { return removal }
        let record = tree[index], id = record.id, place = layout.final[index]
        let seenLocal = seenLocal[index], seenRemote = seenRemote[index]
        var actions: [SyncAction] = remoteMoves!.moves(of: index).map {
            .moveRemote(from: $0.from, to: $0.to, version: seenRemote?.etag, item: id)
        }
        let localMoves = localMoves!.moves(of: index)
        actions += localMoves.map { .moveLocal(from: $0.from, to: $0.to, expected: seenLocal!.stat, item: id) }
        var notice: [SyncAction] = []
        if let first = localMoves.first, layout.local.moved[index] && layout.remote.moved[index] {
            notice = [.remoteNameWins(item: id, localPath: first.from, remotePath: place)]
        }
        switch verdicts[index] {
        case .conflict:
            actions += conflict(at: place, seenLocal!, seenRemote!, kind: record.kind, item: id,
                                base: record.remoteETag, localAt: self.localMoves!.end[index]!)
        case .push:
            let condition = seenRemote == nil ? .mustNotExist : record.remoteETag.map(WriteCondition.mustMatch) ?? .mustNotExist
            actions.append(push(record.kind, seenLocal!, at: place, condition: condition, item: id))
        case .pull:
            actions.append(pull(record.kind, seenRemote!, at: place, replacing: seenLocal?.stat, item: id))
        default:
            if actions.isEmpty, var entry = seenRemote, ownPlaceChanged(index) {
                entry.path = place
                actions.append(.record(item: id, path: place, kind: record.kind, local: seenLocal?.stat, remote: entry))
            }
        }
        return actions + notice
    }

    /// The one action of a record that goes away, or nil when it stays.
    func removal(_ index: Int) -> [SyncAction]? {
        let record = tree[index]
        switch verdicts[index] {
        case .forget:
            return [.forget(record.id)]
        case .removeRemote:
            // A folder counts by existence, so its current version guards the delete.
            let version = record.kind == .folder ? seenRemote[index]?.etag : record.remoteETag
            return [.deleteRemote(remoteMoves!.end[index]!, version: version, item: record.id)]
        case .removeLocal:
            return [.deleteLocal(localMoves!.end[index]!, expected: seenLocal[index]?.stat, item: record.id)]
        case .keep, .push, .pull, .conflict:
            return nil
        }
    }

    /// True when the record's own name or parent changes (not just an ancestor's).
    func ownPlaceChanged(_ index: Int) -> Bool {
        let place = layout.final[index]
        let parentPlace = tree.parents[index].map { layout.final[$0] } ?? .root
        return place.name != tree[index].name || place.parent != parentPlace
    }
}
