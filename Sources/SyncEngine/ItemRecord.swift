import Foundation

/// The local file's identity and shape as recorded right after the last sync.
/// A file whose stat still matches has not changed; that is how echoes of our own
/// writes are ignored.
public struct LocalStat: Hashable, Sendable, Codable {
    public var inode: UInt64
    public var size: Int64
    /// Modification time in nanoseconds since 1970.
    public var modificationTimeNanoseconds: Int64

    public init(inode: UInt64, size: Int64, modificationTimeNanoseconds: Int64) {
        self.inode = inode
        self.size = size
        self.modificationTimeNanoseconds = modificationTimeNanoseconds
    }
}

/// The middle-man state of one item: what both sides last agreed on.
public struct ItemRecord: Hashable, Sendable, Codable {
    public var id: ItemIdentifier
    /// Nil only for the root.
    public var parentID: ItemIdentifier?
    /// The name in its parent, byte-exact (no normalisation).
    public var name: String
    public var kind: ItemKind
    /// Content size in bytes at the last sync; 0 for folders.
    public var size: Int64
    /// The remote content version the local copy is based on; nil before the first sync.
    public var remoteETag: ETag?
    /// The server's stable file id (`oc:fileid`, or a local store's inode), when it has one.
    public var remoteFileID: String?
    /// For symlinks, the target.
    public var symlinkTarget: String?
    /// A hash of the synced content (`sha256:<hex>`), to tell a real conflict from equal bytes.
    public var contentHash: String?
    /// The local stat right after the last sync; nil when nothing is on disk yet.
    public var local: LocalStat?
    public var materialization: Materialization
    public var pinState: PinState

    public init(id: ItemIdentifier, parentID: ItemIdentifier?, name: String, kind: ItemKind,
                size: Int64 = 0, remoteETag: ETag? = nil, remoteFileID: String? = nil,
                symlinkTarget: String? = nil, contentHash: String? = nil, local: LocalStat? = nil,
                materialization: Materialization = .materialized, pinState: PinState = .inherited) {
        self.id = id
        self.parentID = parentID
        self.name = name
        self.kind = kind
        self.size = size
        self.remoteETag = remoteETag
        self.remoteFileID = remoteFileID
        self.symlinkTarget = symlinkTarget
        self.contentHash = contentHash
        self.local = local
        self.materialization = materialization
        self.pinState = pinState
    }
}

/// An opaque position in the remote change history of a domain (the working set's anchor).
public struct SyncAnchor: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
}

/// An operation written to the journal before it starts, so a crash can replay it.
public struct PendingOperation: Hashable, Sendable, Codable {
    /// Assigned by the state store; increasing in journal order.
    public var id: Int64
    /// The item the operation is about, when it has one yet.
    public var itemID: ItemIdentifier?
    /// What the operation does, e.g. `upload`, `download`, `move`; the engine's vocabulary.
    public var kind: String
    /// The operation's arguments as the engine encoded them (JSON); replay decodes them.
    public var payload: Data
    public var createdAt: Date
    /// How many times it was tried and failed.
    public var attempts: Int
    /// Not to be tried before this time (backoff); nil: at once.
    public var notBefore: Date?
    /// The last failure, for status.
    public var lastError: String?

    public init(id: Int64 = 0, itemID: ItemIdentifier?, kind: String, payload: Data, createdAt: Date,
                attempts: Int = 0, notBefore: Date? = nil, lastError: String? = nil) {
        self.id = id
        self.itemID = itemID
        self.kind = kind
        self.payload = payload
        self.createdAt = createdAt
        self.attempts = attempts
        self.notBefore = notBefore
        self.lastError = lastError
    }
}

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
}
