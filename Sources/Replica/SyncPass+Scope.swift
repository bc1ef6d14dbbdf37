import Glibc
import SyncEngine
import SystemCalls

/// How much of each side a pass looks at.
public enum PassScope: Sendable, Equatable {
    /// Scan the whole sync folder and walk the whole remote (the start, a lost event
    /// queue, the hourly backstop, no watcher).
    case full
    /// Look at the paths the watcher says settled; everything else locally is as the
    /// state DB recorded it. With `remote`, walk the remote too (and look at the local
    /// side of whatever changed there); without, the remote is as recorded, and every
    /// write is still guarded by the version it is based on.
    case watched(SettledChanges, remote: Bool)

    var isFull: Bool {
        if case .full = self { return true }
        if case .watched(let changes, _) = self { return changes.fullScan }
        return false
    }

    var walksRemote: Bool {
        if case .watched(let changes, let remote) = self { return remote || changes.fullScan }
        return true
    }

    var label: String {
        switch self {
        case .full: "full"
        case .watched(let changes, let remote):
            changes.fullScan ? "full" : "\(changes.paths.count) path(s)\(remote ? " + remote" : "")"
        }
    }
}

/// The local side of a pass: what it observed, what it passed over.
struct Observed {
    var local: [RemotePath: LocalObservation] = [:]
    var skipped: [(path: String, reason: String)] = []
    var heldBack: [RemotePath: Bool] = [:]
    /// Leftover download temporaries the scan met (no step runs while a pass scans).
    var temporaries: [String] = []
    /// Folders that could not be read, with why (`SyncPass+Unreadable.swift`).
    var unreadable: [RemotePath: String] = [:]
}

extension SyncPass {
    /// The state DB's rows the pass plans with, and the local side as `scope` sees it. A
    /// watched pass that does not walk the remote reads only the rows around the paths the
    /// watcher settled (`SyncProvider.items(around:)`), and then those of the inodes it saw
    /// at paths recorded with another (a move from a place it did not look at); `scoped` is
    /// nil when every row was read, or when what was read is every row.
    /// `recorded` is `base` by path (`Reconciler.paths(of:)`), made once.
    func records(for scope: PassScope) throws(ProviderError)
        -> (base: RecordTree, recorded: [RemotePath: ItemRecord], scoped: ScopedRecords?, observed: Observed) {
        guard case .watched(let changes, remote: false) = scope, !changes.fullScan, changes.paths[.root] != true else {
            let base = RecordTree(try runner.provider.items())
            let recorded = Reconciler.paths(of: base)
            return (base, recorded, nil, try observe(scope, root: base.root, recorded: recorded))
        }
        let paths = Array(Set(changes.paths.keys.map(scanner.bundles.item(for:))))
        var scoped = try runner.provider.items(around: paths)
        var base = RecordTree(scoped.rows)
        var recorded = Reconciler.paths(of: base)
        var observed = try observe(scope, root: base.root, recorded: recorded)
        let moved = observed.local.compactMap { path, seen -> UInt64? in
            seen.stat.inode != 0 && recorded[path]?.local?.inode != seen.stat.inode ? seen.stat.inode : nil
        }
        let known = Set(scoped.rows.compactMap { $0.local?.inode })
        let unknown = moved.filter { !known.contains($0) }
        if !unknown.isEmpty {
            let wider = try runner.provider.items(withLocalInodes: unknown, besides: scoped)
            if wider.rows.count > scoped.rows.count {
                scoped = wider
                base = RecordTree(scoped.rows)
                recorded = Reconciler.paths(of: base)
                observed = try observe(scope, root: base.root, recorded: recorded)
            }
        }
        return (base, recorded, scoped.isPartial ? scoped : nil, observed)
    }

    /// The folders whose every name a scoped pass saw: those whose rows it listed, and
    /// those it found here without a row (new, scanned whole).
    static func listedFolders(_ scoped: ScopedRecords, recorded: [RemotePath: ItemRecord],
                              local: [RemotePath: LocalObservation]) -> Set<RemotePath> {
        var folders = Set(recorded.compactMap { scoped.listed.contains($0.value.id) ? $0.key : nil })
        if scoped.listed.contains(.root) { folders.insert(.root) }  // no path of `recorded` names it
        for path in local.keys where recorded[path] == nil { folders.insert(path.parent) }
        return folders
    }

    /// The local side as `scope` sees it.
    func observe(_ scope: PassScope, root: ItemRecord?, recorded: [RemotePath: ItemRecord]) throws(ProviderError) -> Observed {
        try checkRoot(root)
        guard case .watched(let changes, _) = scope, !changes.fullScan else {
            let scan = try scanner.scan()
            var observed = Observed(skipped: scan.skipped, temporaries: scan.temporaries, unreadable: scan.unreadable)
            observed.local.reserveCapacity(scan.entries.count)
            var byInode: [UInt64: ItemRecord]?
            for (path, entry) in scan.entries {
                admit(Self.observation(entry), at: path, recorded: recorded, byInode: &byInode, overdue: false, into: &observed)
            }
            return observed
        }
        var observed = Observed(local: Self.localAsRecorded(recorded))
        var fresh: [RemotePath: LocalObservation] = [:]
        var replaced: Set<RemotePath> = []  // subtrees whose recorded view is dropped
        // A change inside a bundle is a change of the bundle.
        var paths: [RemotePath: Bool] = [:]
        for (path, subtree) in changes.paths {
            let item = scanner.bundles.item(for: path)
            paths[item] = paths[item] == true || subtree || item != path
        }
        for (path, subtree) in paths.sorted(by: { $0.key.components.count < $1.key.components.count }) {
            guard !path.isRoot || subtree else { continue }
            guard !scanner.excludes(path) else { continue }
            var top: LocalScanEntry?
            if !path.isRoot {
                switch scanner.lookUp(path) {
                case .found(let entry): top = entry
                case .gone: break
                case .unreadable(let folder, let reason):
                    observed.unreadable[folder] = reason
                    continue
                }
            }
            if !subtree, top?.kind == .folder, recorded[path]?.kind == .folder, let reason = unreadableReason(path) {
                observed.unreadable[path] = reason  // its permissions changed (the watcher saw IN_ATTRIB)
            }
            if !path.isRoot && top == nil {
                replaced.insert(path)
                continue
            }
            if let top { fresh[path] = Self.observation(top) }
            let folder = path.isRoot || top?.kind == .folder
            if !folder || subtree || recorded[path]?.kind != .folder {
                replaced.insert(path)
            }
            if folder && (subtree || recorded[path]?.kind != .folder) {
                let scan = try scanner.scan(below: path)
                observed.skipped += scan.skipped
                observed.unreadable.merge(scan.unreadable) { first, _ in first }
                observed.temporaries += scan.temporaries
                for (below, entry) in scan.entries { fresh[below] = Self.observation(entry) }
            }
        }
        if !replaced.isEmpty {
            observed.local = observed.local.filter { path, _ in
                var cursor = path
                while true {
                    if replaced.contains(cursor) { return false }
                    if cursor.isRoot { return true }
                    cursor = cursor.parent
                }
            }
        }
        var byInode: [UInt64: ItemRecord]?
        for (path, observation) in fresh {
            admit(observation, at: path, recorded: recorded, byInode: &byInode, overdue: changes.overdue.contains(path),
                  into: &observed)
        }
        // Every folder above what was seen is there too (it may have settled earlier).
        for path in fresh.keys where observed.local[path] != nil {
            var cursor = path.parent
            while !cursor.isRoot, observed.local[cursor] == nil {
                guard let entry = scanner.item(at: cursor) else { break }
                observed.local[cursor] = Self.observation(entry)
                cursor = cursor.parent
            }
        }
        return observed
    }

    /// Throws unless the sync folder is there and is the folder synced before (its inode
    /// and the inode's generation are recorded on the root's row at the first pass; the
    /// generation, plus one, in the row's modification time, 0 where none is known). A
    /// folder deleted and made again, or a mount point whose file system is not mounted, is
    /// empty: read as "the user deleted everything" it would delete the remote. Sync stops
    /// instead, saying why. The inode number alone does not tell: ext4 hands a folder
    /// deleted and made again at once its old number.
    func checkRoot(_ root: ItemRecord?) throws(ProviderError) {
        var st = stat()
        guard lstat(scanner.root, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else {
            throw ProviderError(.cannotSynchronize,
                                "the sync folder \(scanner.root) is missing or not a folder; sync is stopped until it is back (was it unmounted or moved?)")
        }
        let inode = UInt64(st.st_ino)
        let generation = InodeGeneration.of(scanner.root).map { Int64($0) + 1 } ?? 0
        guard var root else { return }
        let knownGeneration = root.local?.modificationTimeNanoseconds ?? 0
        if let known = root.local?.inode,
           known != inode || (knownGeneration != 0 && generation != 0 && knownGeneration != generation) {
            throw ProviderError(.cannotSynchronize,
                                "the sync folder \(scanner.root) is not the folder synced before (it was deleted and made again, replaced, or it is a mount point whose file system is not mounted); sync is stopped so that nothing on the server is deleted. Put the old folder back or mount it; to start over with this folder instead, stop tidesync and move the domain's state DB away")
        }
        if root.local == nil || knownGeneration == 0 && generation != 0 {
            // The first pass, or a row from before generations were recorded.
            root.local = LocalStat(inode: inode, size: 0, modificationTimeNanoseconds: generation)
            try runner.provider.recordSyncFolder(root)
        }
    }

    /// Puts what was seen at `path` into `observed` — unless it is a changed file (or a
    /// changed bundle with a member) a writer still holds: that is not read now, keeps its recorded state (or, moved, its
    /// recorded contents at its new place) and is handed back to be looked at later.
    /// An `overdue` file (changing or held for the whole cap) is taken as it is. `byInode`
    /// (`byInode(recorded)`) is made the first time a held file needs it: most passes hold none.
    func admit(_ observation: LocalObservation, at path: RemotePath, recorded: [RemotePath: ItemRecord],
               byInode: inout [UInt64: ItemRecord]?, overdue: Bool, into observed: inout Observed) {
        guard observation.kind == .file || observation.kind == .bundle, recorded[path]?.local != observation.stat,
              observation.kind == .file ? runner.folder.isOpenForWriting(path) : runner.folder.bundleHasWriter(path) else {
            observed.local[path] = observation
            return
        }
        if overdue {
            logger.notice("\(path) has been open for writing or changing for a long time; syncing it as it is now")
            observed.local[path] = observation
            return
        }
        observed.heldBack[path] = false
        if byInode == nil { byInode = Self.byInode(recorded) }
        let moved = byInode?[observation.stat.inode].flatMap { $0.local?.sameInode(as: observation.stat) == true ? $0 : nil }
        if let earlier = moved ?? recorded[path], let stat = earlier.local, earlier.kind == observation.kind {
            observed.local[path] = LocalObservation(kind: earlier.kind, size: stat.size, stat: stat)
        }
    }

    /// The recorded items by local inode.
    static func byInode(_ recorded: [RemotePath: ItemRecord]) -> [UInt64: ItemRecord] {
        Dictionary(recorded.values.compactMap { r in r.local.map { ($0.inode, r) } }, uniquingKeysWith: { a, _ in a })
    }

    /// Gives rows recorded before birth times were kept (0) the birth time of what a full
    /// scan found at their path, where that is the file they describe by inode, size and
    /// mtime: from then on a new file the kernel gives that inode number is not taken for
    /// it. Best effort: a row that cannot be written keeps 0, which matches any.
    func recordBirthTimes(_ local: [RemotePath: LocalObservation], recorded: [RemotePath: ItemRecord]) {
        var stats: [ItemIdentifier: LocalStat] = [:]
        for (path, record) in recorded where record.local?.birthNanoseconds == 0 {
            guard let seen = local[path], seen.kind == record.kind, seen.stat.birthNanoseconds != 0,
                  seen.stat == record.local else { continue }
            stats[record.id] = seen.stat
        }
        guard !stats.isEmpty else { return }
        do { try runner.provider.recordBirthTimes(stats) } catch {
            logger.warning("cannot record the birth times of \(stats.count) item(s): \(error.message)")
        }
    }

    /// Replaces what `observed` holds at `paths` by what is there now.
    func overlay(_ paths: [RemotePath], on observed: inout Observed, recorded: [RemotePath: ItemRecord]) {
        for path in Set(paths.map(scanner.bundles.item(for:))) where !path.isRoot && !scanner.excludes(path) {
            switch scanner.lookUp(path) {
            case .found(let entry): observed.local[path] = Self.observation(entry)
            case .gone: if recorded[path] != nil { observed.local[path] = nil }
            case .unreadable(let folder, let reason): observed.unreadable[folder] = reason
            }
        }
    }

    static func observation(_ entry: LocalScanEntry) -> LocalObservation {
        LocalObservation(kind: entry.kind, size: entry.stat.size, stat: entry.stat, symlinkTarget: entry.symlinkTarget)
    }

    /// The local side as the state DB last recorded it.
    static func localAsRecorded(_ recorded: [RemotePath: ItemRecord]) -> [RemotePath: LocalObservation] {
        var result: [RemotePath: LocalObservation] = [:]
        result.reserveCapacity(recorded.count)
        for (path, record) in recorded where !path.isRoot {
            if let stat = record.local {
                result[path] = LocalObservation(kind: record.kind, size: stat.size, stat: stat, symlinkTarget: record.symlinkTarget)
            } else if record.kind == .folder {
                result[path] = LocalObservation(kind: .folder, size: 0, stat: LocalStat(inode: 0, size: 0, modificationTimeNanoseconds: 0))
            }
        }
        return result
    }

    /// The remote side as the state DB last recorded it.
    static func remoteAsRecorded(_ recorded: [RemotePath: ItemRecord]) -> [RemotePath: RemoteEntry] {
        var result: [RemotePath: RemoteEntry] = [:]
        result.reserveCapacity(recorded.count)
        for (path, record) in recorded where !path.isRoot && (record.kind == .folder || record.remoteETag != nil) {
            // A folder's recorded ETag is stale as soon as anything inside changes, and
            // proves nothing on Apache anyway: folders count by existence. (A bundle's
            // version is derived from its members: it is kept.)
            let folder = record.kind == .folder
            result[path] = RemoteEntry(path: path, kind: record.kind, size: record.size,
                                       etag: folder ? nil : record.remoteETag, fileID: record.remoteFileID,
                                       symlinkTarget: record.symlinkTarget)
        }
        return result
    }
}
