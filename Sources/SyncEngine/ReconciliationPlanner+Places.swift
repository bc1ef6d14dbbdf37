/// Whole-tree rules of the plan: two items may not end at one place, a folder stays
/// while something kept needs it, and a deleted folder takes its contents along.
extension Planner {
    /// Something that will be at a final place after the plan.
    enum Claim {
        /// A record that stays; `inPlace` when the remote already holds it there.
        case record(ItemIdentifier, inPlace: Bool)
        case newLocal(RemotePath)
        case newRemote(RemotePath)

        /// The remote side already holds this item at the place, so it keeps the name.
        var holdsRemotePlace: Bool {
            switch self {
            case .record(_, let inPlace): inPlace
            case .newRemote: true
            case .newLocal: false
            }
        }
    }

    /// Gives every item but one a conflict-copy name where several would end at one
    /// place (a local rename onto a name the remote just created, a new local file where
    /// the remote renamed another, a file where the other side made a folder). The item
    /// the remote already holds there keeps the name; a new local and a new remote item
    /// of the same kind are not a collision but a create/create, decided per item.
    mutating func resolveCollisions() {
        for _ in 0..<4 {
            var claims: [RemotePath: [Claim]] = [:]
            for id in tree.ordered where !verdicts[id]!.removes {
                let place = layout.final[id]!
                claims[place, default: []].append(.record(id, inPlace: layout.remotePlace(id) == place))
            }
            for path in newLocal { claims[layout.newLocalFinal(path), default: []].append(.newLocal(path)) }
            for path in newRemote { claims[layout.newRemoteFinal(path), default: []].append(.newRemote(path)) }
            let colliding = claims.keys.filter { claims[$0]!.count > 1 }.sorted(by: RemotePath.precedes)
            guard !colliding.isEmpty else { return }
            for place in claims.keys { names[place.parent, default: []].insert(place.name) }
            var changed = false
            for place in colliding where settle(place, claims[place]!) { changed = true }
            guard changed else { return }
            layout.resolve()
        }
    }

    /// Renames all claims on `place` but the winner; true when anything was renamed.
    private mutating func settle(_ place: RemotePath, _ claims: [Claim]) -> Bool {
        guard claims.count > 1, !isCreateCreate(claims) else { return false }
        let winner = claims.firstIndex(where: \.holdsRemotePlace) ?? 0
        var changed = false
        for (index, claim) in claims.enumerated() where index != winner {
            switch claim {
            case .record(let id, _):
                layout.recordOverrides[id] = copyPath(for: place)
                changed = true
            case .newLocal(let path):
                layout.newLocalOverrides[path] = copyPath(for: place)
                changed = true
            case .newRemote:
                break  // two remote items cannot share a place; the store's guards catch the rest
            }
        }
        return changed
    }

    private func isCreateCreate(_ claims: [Claim]) -> Bool {
        guard claims.count == 2 else { return false }
        switch (claims[0], claims[1]) {
        case (.newLocal(let l), .newRemote(let r)), (.newRemote(let r), .newLocal(let l)):
            return local[l]?.kind == remote[r]?.kind
        default:
            return false
        }
    }

    /// A folder deleted on one side stays (is created again there) while anything that
    /// stays after the plan lies inside it: an edit or new item the other side made in
    /// it. Its unchanged contents are then deleted one by one.
    mutating func keepFoldersWithSurvivors() {
        var occupied: Set<RemotePath> = []
        func occupy(_ path: RemotePath) {
            for ancestor in path.ancestors {
                if !occupied.insert(ancestor).inserted { break }  // its ancestors are in already
            }
        }
        for id in tree.ordered where !verdicts[id]!.removes { occupy(layout.final[id]!) }
        for path in newLocal { occupy(layout.newLocalFinal(path)) }
        for path in newRemote { occupy(layout.newRemoteFinal(path)) }
        for id in tree.ordered.reversed() where tree[id].kind == .folder {
            let verdict = verdicts[id]!
            guard verdict == .removeRemote || verdict == .removeLocal, occupied.contains(layout.final[id]!) else { continue }
            verdicts[id] = verdict == .removeRemote ? .pull : .push
            occupy(layout.final[id]!)
        }
    }

    /// Drops deletions inside a folder that is itself deleted on that side, and rows to
    /// forget below a row that is removed anyway (removing a row removes its descendants).
    func subsumed(_ actions: [SyncAction]) -> [SyncAction] {
        var remoteGone: Set<RemotePath> = [], localGone: Set<RemotePath> = []
        for action in actions {
            if case .deleteRemote(let path, _, _) = action { remoteGone.insert(path) }
            if case .deleteLocal(let path, _, _) = action { localGone.insert(path) }
        }
        return actions.filter { action in
            switch action {
            case .deleteRemote(let path, _, _): !path.ancestors.contains(where: remoteGone.contains)
            case .deleteLocal(let path, _, _): !path.ancestors.contains(where: localGone.contains)
            case .forget(let id): !hasRemovedAncestor(id)
            default: true
            }
        }
    }

    private func hasRemovedAncestor(_ id: ItemIdentifier) -> Bool {
        var cursor = tree.parentID(of: id)
        while let parent = cursor {
            if verdicts[parent]!.removes { return true }
            cursor = tree.parentID(of: parent)
        }
        return false
    }
}
