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
    var verdicts: [ItemIdentifier: Verdict] = [:]
    /// Paths of items no record accounts for, sorted.
    let newLocal: [RemotePath]
    let newRemote: [RemotePath]
    /// Names taken in each folder, on either side, for conflict-copy names.
    var names: [RemotePath: Set<String>] = [:]

    init(base: [ItemRecord], local: [RemotePath: LocalObservation], remote: [RemotePath: RemoteEntry],
         now: Date, host: String, timeZone: TimeZone) {
        let tree = BaseTree(base)
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
            + tree.ordered.filter { tree[$0].kind == .bundle }.flatMap { [localPlacement.now[$0]!, remotePlacement.now[$0]!] })
        let claimedLocal = Set(localPlacement.present.map { localPlacement.now[$0]! })
        let claimedRemote = Set(remotePlacement.present.map { remotePlacement.now[$0]! })
        func isNew(_ path: RemotePath, _ claimed: Set<RemotePath>) -> Bool {
            !claimed.contains(path) && !path.ancestors.contains(where: bundles.contains)
        }
        newLocal = local.keys.filter { isNew($0, claimedLocal) }.sorted(by: RemotePath.precedes)
        newRemote = remote.keys.filter { isNew($0, claimedRemote) }.sorted(by: RemotePath.precedes)
        for path in Array(local.keys) + Array(remote.keys) { names[path.parent, default: []].insert(path.name) }
        for id in tree.ordered { verdicts[id] = verdict(id) }
    }

    /// The plan, in an executable order.
    mutating func run() -> [SyncAction] {
        resolveCollisions()
        keepFoldersWithSurvivors()
        var actions: [SyncAction] = []
        for id in tree.ordered { actions += recordActions(id) }
        actions += newItemActions()
        return ActionOrder.sorted(subsumed(actions))
    }

    // MARK: Per record

    func localSeen(_ id: ItemIdentifier) -> LocalObservation? {
        layout.local.present.contains(id) ? layout.local.now[id].flatMap { local[$0] } : nil
    }

    func remoteSeen(_ id: ItemIdentifier) -> RemoteEntry? {
        layout.remote.present.contains(id) ? layout.remote.now[id].flatMap { remote[$0] } : nil
    }

    func verdict(_ id: ItemIdentifier) -> Verdict {
        let record = tree[id]
        let l = SideChange.local(record, seen: localSeen(id), moved: layout.local.moved.contains(id))
        let r = SideChange.remote(record, seen: remoteSeen(id), moved: layout.remote.moved.contains(id))
        return Verdict.decide(folder: record.kind == .folder, local: l, remote: r)
    }

    mutating func recordActions(_ id: ItemIdentifier) -> [SyncAction] {
        let record = tree[id], place = layout.final[id]!
        let seenLocal = localSeen(id), seenRemote = remoteSeen(id)
        let here = layout.localPlace(id), there = layout.remotePlace(id)
        switch verdicts[id]! {
        case .forget:
            return [.forget(id)]
        case .removeRemote:
            let version = record.kind == .folder ? seenRemote?.etag : record.remoteETag
            return [.deleteRemote(there!, version: version, item: id)]
        case .removeLocal:
            return [.deleteLocal(here!, expected: seenLocal?.stat, item: id)]
        case .keep, .push, .pull, .conflict:
            break
        }
        var actions: [SyncAction] = []
        if let there, there != place {
            actions.append(.moveRemote(from: there, to: place, version: seenRemote?.etag, item: id))
        }
        var localMove: SyncAction?, notice: [SyncAction] = []
        if let here, let seenLocal, here != place {
            localMove = .moveLocal(from: here, to: place, expected: seenLocal.stat, item: id)
            if layout.local.moved.contains(id) && layout.remote.moved.contains(id) {
                notice = [.remoteNameWins(item: id, localPath: here, remotePath: place)]
            }
        }
        if verdicts[id]! == .conflict {
            return actions + conflict(at: place, seenLocal!, seenRemote!, kind: record.kind, item: id,
                                      base: record.remoteETag, localAt: here!, localMove: localMove) + notice
        }
        actions += (localMove.map { [$0] } ?? []) + notice
        switch verdicts[id]! {
        case .push:
            let condition = seenRemote == nil ? .mustNotExist : record.remoteETag.map(WriteCondition.mustMatch) ?? .mustNotExist
            actions.append(push(record.kind, seenLocal!, at: place, condition: condition, item: id))
        case .pull:
            actions.append(pull(record.kind, seenRemote!, at: place, replacing: seenLocal?.stat, item: id))
        default:
            if actions.isEmpty, var entry = seenRemote, ownPlaceChanged(id) {
                entry.path = place
                actions.append(.record(item: id, path: place, kind: record.kind, local: seenLocal?.stat, remote: entry))
            }
        }
        return actions
    }

    /// True when the record's own name or parent changes (not just an ancestor's).
    func ownPlaceChanged(_ id: ItemIdentifier) -> Bool {
        let place = layout.final[id]!
        let parentPlace = tree.parentID(of: id).flatMap { layout.final[$0] } ?? .root
        return place.name != tree[id].name || place.parent != parentPlace
    }

    // MARK: New items

    mutating func newItemActions() -> [SyncAction] {
        var actions: [SyncAction] = []
        let remoteAt = Dictionary(newRemote.map { (layout.newRemoteFinal($0), $0) }, uniquingKeysWith: { first, _ in first })
        var paired: Set<RemotePath> = []
        for path in newLocal {
            let seen = local[path]!, place = layout.newLocalFinal(path)
            if let copy = layout.newLocalOverrides[path] {
                let current = layout.localToFinal(path.parent).child(path.name)
                actions.append(.conflictCopy(ConflictCopy(path: current, copy: copy, kind: seen.kind, local: seen.stat,
                                                          symlinkTarget: seen.symlinkTarget, item: nil, baseVersion: nil,
                                                          remoteVersion: nil, detectedAt: now)))
            } else if let other = remoteAt[place], let entry = remote[other], entry.kind == seen.kind {
                paired.insert(other)
                actions += conflict(at: place, seen, entry, kind: entry.kind, item: nil, base: nil, localAt: place)
            } else {
                actions.append(push(seen.kind, seen, at: place, condition: .mustNotExist, item: nil))
            }
        }
        for path in newRemote where !paired.contains(path) {
            let entry = remote[path]!
            actions.append(pull(entry.kind, entry, at: layout.newRemoteFinal(path), replacing: nil, item: nil))
        }
        return actions
    }

    // MARK: Building blocks

    func push(_ kind: ItemKind, _ seen: LocalObservation, at place: RemotePath, condition: WriteCondition,
              item: ItemIdentifier?) -> SyncAction {
        switch kind {
        case .folder: .createRemoteFolder(place, item: item)
        case .symlink: .createRemoteSymlink(place, target: seen.symlinkTarget ?? "", condition: condition, item: item)
        case .file, .bundle: .upload(place, condition: condition, source: seen.stat, item: item)
        }
    }

    func pull(_ kind: ItemKind, _ entry: RemoteEntry, at place: RemotePath, replacing: LocalStat?,
              item: ItemIdentifier?) -> SyncAction {
        switch kind {
        case .folder: .createLocalFolder(place, item: item)
        case .symlink: .createLocalSymlink(place, target: entry.symlinkTarget ?? "", replacing: replacing, item: item)
        case .file, .bundle: .download(place, version: entry.etag, replacing: replacing, item: item)
        }
    }

    /// Both sides hold something at `place` that the other has not seen: folders merge,
    /// equal symlinks agree, same-size files are compared, anything else keeps both. The
    /// local version is at `localAt`; `localMove` brings it to `place` when the two differ
    /// (the remote name won), which only agreeing or comparing needs: a conflict copy is
    /// made straight from where the local version is.
    mutating func conflict(at place: RemotePath, _ seenLocal: LocalObservation, _ seenRemote: RemoteEntry,
                           kind: ItemKind, item: ItemIdentifier?, base: ETag?,
                           localAt: RemotePath, localMove: SyncAction? = nil) -> [SyncAction] {
        var agreed = seenRemote
        agreed.path = place
        let record = SyncAction.record(item: item, path: place, kind: kind, local: seenLocal.stat, remote: agreed)
        let prefix = localMove.map { [$0] } ?? []
        if kind == .folder { return prefix + [record] }
        if kind == .symlink, seenLocal.symlinkTarget == seenRemote.symlinkTarget { return prefix + [record] }
        let bringDown = pull(kind, seenRemote, at: place, replacing: nil, item: item)
        if kind == .file, seenLocal.size == seenRemote.size {
            let copy = conflictCopy(of: seenLocal, at: place, copyBeside: place, item: item, base: base, remote: seenRemote)
            return prefix + [.compareContents(place, local: seenLocal.stat, remote: seenRemote.etag, item: item,
                                              ifDifferent: [.conflictCopy(copy), bringDown])]
        }
        let copy = conflictCopy(of: seenLocal, at: localAt, copyBeside: place, item: item, base: base, remote: seenRemote)
        return [.conflictCopy(copy), bringDown]
    }

    mutating func conflictCopy(of seenLocal: LocalObservation, at path: RemotePath, copyBeside place: RemotePath,
                               item: ItemIdentifier?, base: ETag?, remote: RemoteEntry) -> ConflictCopy {
        ConflictCopy(path: path, copy: copyPath(for: place), kind: seenLocal.kind, local: seenLocal.stat,
                     symlinkTarget: seenLocal.symlinkTarget, item: item, baseVersion: base,
                     remoteVersion: remote.etag, detectedAt: now)
    }

    /// A free conflict-copy name beside `place`, reserved so no later copy takes it.
    mutating func copyPath(for place: RemotePath) -> RemotePath {
        let name = ConflictName.make(for: place.name, date: now, host: host, timeZone: timeZone,
                                     taken: names[place.parent] ?? [])
        names[place.parent, default: []].insert(name)
        return place.parent.child(name)
    }
}
