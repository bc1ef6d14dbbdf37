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
