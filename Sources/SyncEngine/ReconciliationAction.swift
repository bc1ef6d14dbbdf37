import Foundation

/// What the local scan saw at one path of the sync folder.
public struct LocalObservation: Hashable, Sendable {
    /// `file`, `folder`, `symlink`, or `bundle` (a directory the replica syncs as one item).
    public var kind: ItemKind
    /// Bytes of content; 0 for folders.
    public var size: Int64
    /// The item's inode, size and mtime (of the link itself for symlinks).
    public var stat: LocalStat
    /// For symlinks: the target, exactly as written.
    public var symlinkTarget: String?

    /// An observation as the scanner makes it.
    public init(kind: ItemKind, size: Int64, stat: LocalStat, symlinkTarget: String? = nil) {
        self.kind = kind
        self.size = size
        self.stat = stat
        self.symlinkTarget = symlinkTarget
    }
}

/// A conflict: the local version of an item is kept beside the original under a
/// conflict-copy name, on both sides, so the remote version can take the original name.
public struct ConflictCopy: Hashable, Sendable {
    /// Where the local version is when the action runs (after the moves planned before it).
    public var path: RemotePath
    /// Where it goes, on both sides: the same folder, a `ConflictName` name.
    public var copy: RemotePath
    /// The local item's kind.
    public var kind: ItemKind
    /// The local item as scanned; it is renamed only while it still has this stat.
    public var local: LocalStat
    /// For symlinks: the local target.
    public var symlinkTarget: String?
    /// The item recorded at `path`; nil when the local item is new (create/create, collision).
    public var item: ItemIdentifier?
    /// The version both sides last agreed on; nil when the local item is new.
    public var baseVersion: ETag?
    /// The remote version that takes the original name; nil when the remote item there
    /// is not a file (it is brought down by its own action).
    public var remoteVersion: ETag?
    /// When the conflict was found (the `now` of the plan), for the conflict list.
    public var detectedAt: Date

    /// A conflict copy with every field given.
    public init(path: RemotePath, copy: RemotePath, kind: ItemKind, local: LocalStat, symlinkTarget: String? = nil,
                item: ItemIdentifier?, baseVersion: ETag?, remoteVersion: ETag?, detectedAt: Date) {
        self.path = path
        self.copy = copy
        self.kind = kind
        self.local = local
        self.symlinkTarget = symlinkTarget
        self.item = item
        self.baseVersion = baseVersion
        self.remoteVersion = remoteVersion
        self.detectedAt = detectedAt
    }
}

/// One step of a reconciliation plan, carried out by the engine through its ports.
///
/// Paths are relative to the sync root and name the place an item has *when the action
/// runs*, i.e. after the earlier actions of the same plan. Every write carries the
/// precondition it was decided under (a remote version, an expected local stat), so an
/// action replayed after a crash either finds its work done, does it, or fails its guard
/// and leaves the item to the next plan — it never overwrites data it did not see.
/// `item` is the state-DB row the action updates; nil means "a new row" (the engine
/// assigns the id and finds the parent row by path).
public enum SyncAction: Hashable, Sendable {
    /// Create the remote folder at the path (an existing folder there counts as done).
    case createRemoteFolder(RemotePath, item: ItemIdentifier?)
    /// Upload the local file at the path to the same remote path, guarded by `condition`
    /// (`.mustMatch(base)` for an edit, `.mustNotExist` for a create); `source` is the
    /// local stat the plan saw, recorded with the new remote version.
    case upload(RemotePath, condition: WriteCondition, source: LocalStat, item: ItemIdentifier?)
    /// Create or replace the remote symlink at the path, guarded by `condition`.
    case createRemoteSymlink(RemotePath, target: String, condition: WriteCondition, item: ItemIdentifier?)
    /// Move the remote item (a folder with its whole subtree, in one operation); never
    /// overwrites; guarded by the version the plan saw.
    case moveRemote(from: RemotePath, to: RemotePath, version: ETag?, item: ItemIdentifier)
    /// Delete the remote item (folders recursively), guarded by the version the plan saw.
    case deleteRemote(RemotePath, version: ETag?, item: ItemIdentifier)

    /// Create the local folder at the path (an existing folder there counts as done).
    case createLocalFolder(RemotePath, item: ItemIdentifier?)
    /// Bring the remote file at the path down to the same local path (whole, or as a
    /// placeholder per policy), only if it still has `version`; the local item there must
    /// still have the stat `replacing` (nil: nothing may be there).
    case download(RemotePath, version: ETag?, replacing: LocalStat?, item: ItemIdentifier?)
    /// Create or replace the local symlink at the path; `replacing` as for `download`.
    case createLocalSymlink(RemotePath, target: String, replacing: LocalStat?, item: ItemIdentifier?)
    /// Rename the local item (a folder with its subtree) if it still has the stat `expected`
    /// (for a folder only the inode counts: its size and mtime follow its contents).
    case moveLocal(from: RemotePath, to: RemotePath, expected: LocalStat, item: ItemIdentifier)
    /// Delete the local item if it still has the stat `expected`; for a folder (inode only),
    /// only while every item inside still matches its row (otherwise the next plan decides
    /// again: something new inside must not be deleted with it).
    case deleteLocal(RemotePath, expected: LocalStat?, item: ItemIdentifier)

    /// Keep the local version under `copy` on both sides: rename it locally, then upload
    /// it (`.mustNotExist`; for a folder: create the remote folder, its contents follow
    /// as their own actions) as a new item, and record the conflict.
    case conflictCopy(ConflictCopy)
    /// Both sides hold a file of the same size at the path, changed since the base (or
    /// both new): compare content hashes (the server's checksum, else hash the bytes).
    /// Equal: record the row with `local` and `remote` as agreed versions. Different:
    /// run `ifDifferent` in order.
    case compareContents(RemotePath, local: LocalStat, remote: ETag?, item: ItemIdentifier?, ifDifferent: [SyncAction])
    /// Both sides already agree on the item at the path: write its row with these
    /// versions (when `item` is nil: a new row, or the one a replay already made at the
    /// path). No I/O on either side.
    case record(item: ItemIdentifier?, path: RemotePath, kind: ItemKind, local: LocalStat?, remote: RemoteEntry)
    /// The item is gone on both sides: remove its row (and its descendants' rows).
    case forget(ItemIdentifier)
    /// The item was renamed on both sides to different places; the remote place won
    /// (a `moveLocal` to it is in the plan). Only to be logged.
    case remoteNameWins(item: ItemIdentifier, localPath: RemotePath, remotePath: RemotePath)
}

extension SyncAction {
    /// The path the action is about (its target for moves; the root for `forget`).
    public var path: RemotePath {
        switch self {
        case .createRemoteFolder(let path, _), .upload(let path, _, _, _), .createRemoteSymlink(let path, _, _, _),
             .deleteRemote(let path, _, _), .createLocalFolder(let path, _), .download(let path, _, _, _),
             .createLocalSymlink(let path, _, _, _), .deleteLocal(let path, _, _), .compareContents(let path, _, _, _, _),
             .record(_, let path, _, _, _), .remoteNameWins(_, _, let path):
            path
        case .moveRemote(_, let path, _, _), .moveLocal(_, let path, _, _):
            path
        case .conflictCopy(let conflict):
            conflict.path
        case .forget:
            .root
        }
    }

    /// True for `deleteRemote` and `deleteLocal`, which a plan puts last.
    public var isDeletion: Bool {
        switch self {
        case .deleteRemote, .deleteLocal: true
        default: false
        }
    }
}
