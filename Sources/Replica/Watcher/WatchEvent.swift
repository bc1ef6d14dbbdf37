import SyncEngine

/// What the watcher saw, in paths relative to the sync root. Events are hints: a path
/// named here is stat'ed and compared with the state DB before anything is decided.
public enum WatchEvent: Sendable, Hashable {
    /// Something at the path was created, written, closed after writing, or had its
    /// attributes changed (files and symlinks; for a folder only its attributes — it may
    /// have become readable or unreadable; its other own events say nothing).
    case changed(RemotePath)
    /// A folder appeared (created, or moved in from outside the sync folder): it and
    /// everything below it are looked at, since files made in it before its watch
    /// existed raised no event.
    case folderAppeared(RemotePath)
    /// The item at the path was deleted, or moved out of the sync folder.
    case removed(RemotePath)
    /// The item moved inside the sync folder (an `IN_MOVED_FROM`/`IN_MOVED_TO` pair).
    case moved(from: RemotePath, to: RemotePath, isFolder: Bool)
    /// Events were lost (`IN_Q_OVERFLOW`): the whole sync folder is scanned again.
    case overflow
    /// The folder at the path (and what is below it) could not be watched; `errno` says
    /// why (ENOSPC: the watch limit). It is rescanned periodically instead.
    case unwatched(RemotePath, errno: Int32)
    /// The sync folder itself was deleted, moved away or unmounted. Nothing in it may be
    /// read as deleted: sync stops until it is back.
    case rootGone(String)
}

extension WatchEvent {
    /// The event as it concerns items: a change anywhere inside a bundle is a change of
    /// the bundle (`changed(bundle)`), so a bundle settles after a quiet period as a whole
    /// and is looked at as one item.
    public func mapped(by rule: BundleRule) -> [WatchEvent] {
        switch self {
        case .changed(let path), .removed(let path), .folderAppeared(let path):
            return rule.enclosingBundle(of: path).map { [.changed($0)] } ?? [self]
        case .unwatched(let path, let code):
            // Still rescanned periodically (and warned about), as the whole bundle.
            return rule.enclosingBundle(of: path).map { [.unwatched($0, errno: code)] } ?? [self]
        case .moved(let from, let to, let isFolder):
            let (fromBundle, toBundle) = (rule.enclosingBundle(of: from), rule.enclosingBundle(of: to))
            if fromBundle == nil && toBundle == nil { return [self] }
            return [fromBundle.map { .changed($0) } ?? .removed(from),
                    toBundle.map { .changed($0) } ?? (isFolder ? .folderAppeared(to) : .changed(to))]
        case .overflow, .rootGone:
            return [self]
        }
    }
}
