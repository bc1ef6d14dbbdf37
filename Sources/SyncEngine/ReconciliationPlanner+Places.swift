/// Whole-tree rules of the plan: two items may not end at one place, a folder stays
/// while something kept needs it, and a deleted folder takes its contents along.
extension Planner {
    /// Something that will be at a final place after the plan.
    enum Claim {
        /// A record that stays; `inPlace` when the remote already holds it there.
        case record(Int, inPlace: Bool)
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
            guard hasCollision() else { return }
            var claims: [RemotePath: [Claim]] = [:]
            for index in tree.indices where !verdicts[index].removes {
                let place = layout.final[index]
                claims[place, default: []].append(.record(index, inPlace: layout.remotePlace(index) == place))
            }
            for path in newLocal { claims[layout.newLocalFinal(path), default: []].append(.newLocal(path)) }
            for path in newRemote { claims[layout.newRemoteFinal(path), default: []].append(.newRemote(path)) }
            let colliding = claims.keys.filter { claims[$0]!.count > 1 }.sorted(by: RemotePath.precedes)
            guard !colliding.isEmpty else { return }
            for place in claims.keys { reserve(place) }
            var changed = false
            for place in colliding where settle(place, claims[place]!) { changed = true }
            guard changed else { return }
            layout.resolve()
        }
    }

    /// True when two records or new items end at one place (a quick check: collisions are rare).
    private func hasCollision() -> Bool {
        var places = Set<RemotePath>(minimumCapacity: tree.records.count + newLocal.count + newRemote.count)
        for index in tree.indices where !verdicts[index].removes {
            if !places.insert(layout.final[index]).inserted { return true }
        }
        for path in newLocal where !places.insert(layout.newLocalFinal(path)).inserted { return true }
        for path in newRemote where !places.insert(layout.newRemoteFinal(path)).inserted { return true }
        return false
    }

    /// Renames all claims on `place` but the winner; true when anything was renamed.
    private mutating func settle(_ place: RemotePath, _ claims: [Claim]) -> Bool {
        guard claims.count > 1, !isCreateCreate(claims) else { return false }
        let winner = claims.firstIndex(where: \.holdsRemotePlace) ?? 0
        var changed = false
        for (index, claim) in claims.enumerated() where index != winner {
            switch claim {
            case .record(let index, _):
                layout.recordOverrides[index] = copyPath(for: place)
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
        for index in tree.indices where !verdicts[index].removes { occupy(layout.final[index]) }
        for path in newLocal { occupy(layout.newLocalFinal(path)) }
        for path in newRemote { occupy(layout.newRemoteFinal(path)) }
        for index in tree.indices.reversed() where tree[index].kind == .folder {
            let verdict = verdicts[index]
            guard verdict == .removeRemote || verdict == .removeLocal, occupied.contains(layout.final[index]) else { continue }
            verdicts[index] = verdict == .removeRemote ? .pull : .push
            occupy(layout.final[index])
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
        let forgotten = Set(tree.indices.filter { index in
            verdicts[index] == .forget && tree.ancestors(of: index).contains { verdicts[$0].removes }
        }.map { tree[$0].id })
        return actions.filter { action in
            switch action {
            case .deleteRemote(let path, _, _): !path.ancestors.contains(where: remoteGone.contains)
            case .deleteLocal(let path, _, _): !path.ancestors.contains(where: localGone.contains)
            case .forget(let id): !forgotten.contains(id)
            default: true
            }
        }
    }
}
