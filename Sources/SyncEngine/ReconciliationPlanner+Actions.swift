import Foundation

/// The actions for items no record accounts for, and the building blocks the per-record
/// rules share: bringing a version to the other side, and keeping both.
extension Planner {
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

    /// What a conflict between two present versions comes to.
    enum ConflictOutcome {
        /// Nothing to keep apart: folders merge, symlinks with one target agree.
        case agree
        /// Files (or bundles) of one size: the engine compares contents before keeping both.
        case compare
        /// Keep both: the local version goes to a conflict copy.
        case copy
    }

    func conflictOutcome(_ kind: ItemKind, _ seenLocal: LocalObservation, _ seenRemote: RemoteEntry) -> ConflictOutcome {
        if kind == .folder || (kind == .symlink && seenLocal.symlinkTarget == seenRemote.symlinkTarget) { return .agree }
        return (kind == .file || kind == .bundle) && seenLocal.size == seenRemote.size ? .compare : .copy
    }

    /// Both sides hold something at `place` that the other has not seen. Agreeing and
    /// comparing happen at `place` (the local version was moved there); a conflict copy
    /// is made straight from `localAt`, where the local version is, and the remote version
    /// then takes `place`.
    mutating func conflict(at place: RemotePath, _ seenLocal: LocalObservation, _ seenRemote: RemoteEntry,
                           kind: ItemKind, item: ItemIdentifier?, base: ETag?, localAt: RemotePath) -> [SyncAction] {
        var agreed = seenRemote
        agreed.path = place
        let bringDown = pull(kind, seenRemote, at: place, replacing: nil, item: item)
        switch conflictOutcome(kind, seenLocal, seenRemote) {
        case .agree:
            return [.record(item: item, path: place, kind: kind, local: seenLocal.stat, remote: agreed)]
        case .compare:
            let copy = conflictCopy(of: seenLocal, at: place, copyBeside: place, item: item, base: base, remote: seenRemote)
            return [.compareContents(place, local: seenLocal.stat, remote: seenRemote.etag, item: item,
                                     ifDifferent: [.conflictCopy(copy), bringDown])]
        case .copy:
            let copy = conflictCopy(of: seenLocal, at: localAt, copyBeside: place, item: item, base: base, remote: seenRemote)
            return [.conflictCopy(copy), bringDown]
        }
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
                                     taken: takenNames(in: place.parent))
        reserve(place.parent.child(name))
        return place.parent.child(name)
    }

    mutating func takenNames(in folder: RemotePath) -> Set<String> {
        if names == nil {
            var all: [RemotePath: Set<String>] = [:]
            for path in Array(local.keys) + Array(remote.keys) { all[path.parent, default: []].insert(path.name) }
            names = all
        }
        return names![folder] ?? []
    }

    mutating func reserve(_ path: RemotePath) {
        _ = takenNames(in: path.parent)
        names![path.parent, default: []].insert(path.name)
    }
}
