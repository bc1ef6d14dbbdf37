import Foundation

/// One change to the state DB. A list of them is applied in one transaction, which is
/// how an operation is marked done together with the result it recorded.
public enum StateChange: Hashable, Sendable {
    /// Inserts or replaces the item's row.
    case upsert(ItemRecord)
    /// Removes the item, its descendants and their ranges and bundle members. Journal
    /// entries stay: an operation may outlive its item row and is completed separately.
    case remove(ItemIdentifier)
    /// Replaces the item's hydrated ranges and the version they belong to.
    case setHydratedRanges(ItemIdentifier, RangeSet, version: ETag?)
    case setSyncAnchor(SyncAnchor?)
    /// Deletes the journal entry: the operation is done.
    case completeOperation(Int64)
    /// Counts a failed attempt and sets the earliest next try.
    case failOperation(Int64, error: String, notBefore: Date?)
    /// Adds a conflict copy to the list of conflicts.
    case recordConflict(ConflictRecord)
    /// Replaces the manifest of the bundle `id`.
    case setBundleMembers(ItemIdentifier, [BundleMember])
    /// Records which remote the rows describe (replacing what was recorded).
    case setRemoteIdentity(RemoteIdentity)
    /// Sets the birth time of the item's local inode, only while its row has the inode,
    /// size and mtime of `stat` and no birth time yet (a row recorded before they were kept).
    case setLocalBirth(ItemIdentifier, LocalStat)
}
