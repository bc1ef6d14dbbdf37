import Foundation

/// The three-way decision of the sync engine, as a pure function: base × local × remote →
/// actions (STYLE.md §1). No I/O; the engine carries the actions out through its ports.
///
/// Rules (issues 3 and 7):
/// - A local item is unchanged while its stat equals the recorded one; a remote item while
///   its ETag has the recorded value (weakness ignored); folders count by existence only.
/// - One side changed: the change goes to the other side, guarded by the base version
///   (`.mustMatch`), or `.mustNotExist` for a create.
/// - Both changed, or anything unclear: both versions are kept. Edit/edit and
///   create/create of files make a conflict copy of the local file (same-size files are
///   first compared by hash); an edit beats a delete on the other side (re-upload or
///   download again); a folder deleted on one side is made again there to hold what the
///   other side added or changed inside it; deleted on both sides, the row is forgotten.
/// - Renames: a record whose inode is found at another local path is a local move, one
///   whose file id (without file ids: size and ETag, for files) is at another remote path
///   is a remote move — one move action, even for a folder of many files. A move plus an
///   edit is a move, then the content rule. Moved on both sides: the remote place wins.
/// - Order: parents before children, moves before what goes inside moved folders,
///   deletions last; deletions inside a deleted folder are not listed separately.
public enum Reconciler {
    /// The actions that bring both sides in agreement, in an executable order.
    ///
    /// - Parameters:
    ///   - base: every row of the state DB; paths come from parent chains (the root's row
    ///     may be included or not). Rows whose chain does not reach the root are ignored.
    ///   - local: what the local scan saw, by path relative to the sync root.
    ///   - remote: what the remote walk saw, by path relative to the store's root.
    ///   - now: the time of the plan, for conflict-copy names and conflict records.
    ///   - host: this machine's name, for conflict-copy names.
    ///   - timeZone: the zone conflict-copy names are written in.
    public static func plan(base: [ItemRecord], local: [RemotePath: LocalObservation],
                            remote: [RemotePath: RemoteEntry], now: Date, host: String,
                            timeZone: TimeZone = .current) -> [SyncAction] {
        plan(tree: RecordTree(base), local: local, remote: remote, now: now, host: host, timeZone: timeZone)
    }

    /// ``plan(base:local:remote:now:host:timeZone:)`` over rows already made a tree.
    public static func plan(tree: RecordTree, local: [RemotePath: LocalObservation],
                            remote: [RemotePath: RemoteEntry], now: Date, host: String,
                            timeZone: TimeZone = .current) -> [SyncAction] {
        var planner = Planner(tree: tree.tree, local: local, remote: remote, now: now, host: host, timeZone: timeZone)
        return planner.run()
    }
}

extension Reconciler {
    /// Every record of `base` by the path its parent chain gives (rows whose chain does not
    /// reach the root are left out, as the planner leaves them out).
    public static func paths(of base: [ItemRecord]) -> [RemotePath: ItemRecord] {
        paths(of: RecordTree(base))
    }

    /// ``paths(of:)`` of rows already made a tree.
    public static func paths(of records: RecordTree) -> [RemotePath: ItemRecord] {
        let tree = records.tree
        var result: [RemotePath: ItemRecord] = [:]
        result.reserveCapacity(tree.records.count)
        for index in tree.indices { result[tree.paths[index]] = tree[index] }
        return result
    }

    /// True when the local side is exactly what `recorded` (every row but the root's, by
    /// path) describes, as the planner compares them: every row has an item of its kind at
    /// its path with its inode (and, for anything but a folder, its size, mtime and link
    /// target), and nothing else is there. With a remote that is as recorded too, the plan
    /// is empty: nothing is new, gone, moved or edited on either side. A row without a local
    /// stat (other than a folder's) is never taken as agreeing.
    public static func agrees(_ local: [RemotePath: LocalObservation], with recorded: [RemotePath: ItemRecord]) -> Bool {
        var rows = 0
        for (path, record) in recorded where !path.isRoot {
            rows += 1
            guard let seen = local[path], agrees(seen, with: record) else { return false }
        }
        return local.count - (local[.root] == nil ? 0 : 1) == rows
    }

    /// True when `seen` is the item `record` describes, as `agrees(_:with:)` compares one.
    public static func agrees(_ seen: LocalObservation, with record: ItemRecord) -> Bool {
        guard seen.kind == record.kind else { return false }
        guard let stat = record.local else { return record.kind == .folder }
        guard seen.stat.sameInode(as: stat) else { return false }
        if record.kind == .folder { return true }
        return seen.stat == stat && (record.kind != .symlink || seen.symlinkTarget == record.symlinkTarget)
    }
}
