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
