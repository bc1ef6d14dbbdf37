/// The local file's identity and shape as recorded right after the last sync.
/// A file whose stat still matches has not changed; that is how echoes of our own
/// writes are ignored.
public struct LocalStat: Hashable, Sendable, Codable {
    public var inode: UInt64
    public var size: Int64
    /// Modification time in nanoseconds since 1970.
    public var modificationTimeNanoseconds: Int64
    /// When the inode was made (`statx`'s birth time), in nanoseconds since 1970; 0 when
    /// not known (a file system without birth times, a row recorded before they were).
    /// Inode, size and mtime are not a file's identity: a new file can get a deleted one's
    /// inode number from the kernel and its size and mtime from `cp -p`, `tar x` or a
    /// download (the server's time, in whole seconds on Apache). Taken for the deleted
    /// file, its bytes were lost. The birth time tells them apart: nothing sets it.
    public var birthNanoseconds: Int64

    public init(inode: UInt64, size: Int64, modificationTimeNanoseconds: Int64, birthNanoseconds: Int64 = 0) {
        self.inode = inode
        self.size = size
        self.modificationTimeNanoseconds = modificationTimeNanoseconds
        self.birthNanoseconds = birthNanoseconds
    }

    /// The same inode: the same number, and the same birth where both are known.
    public func sameInode(as other: LocalStat) -> Bool {
        inode == other.inode && (birthNanoseconds == 0 || other.birthNanoseconds == 0 || birthNanoseconds == other.birthNanoseconds)
    }

    /// Equal shapes of one inode. An unknown birth time matches any, so a row recorded
    /// before birth times were kept does not read as a change of every file.
    public static func == (lhs: LocalStat, rhs: LocalStat) -> Bool {
        lhs.sameInode(as: rhs) && lhs.size == rhs.size && lhs.modificationTimeNanoseconds == rhs.modificationTimeNanoseconds
    }

    /// Leaves the birth time out, so that stats equal by `==` hash alike.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(inode)
        hasher.combine(size)
        hasher.combine(modificationTimeNanoseconds)
    }

    private enum CodingKeys: String, CodingKey { case inode, size, modificationTimeNanoseconds, birthNanoseconds }

    /// Decodes journal payloads written before birth times were kept, too.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        inode = try container.decode(UInt64.self, forKey: .inode)
        size = try container.decode(Int64.self, forKey: .size)
        modificationTimeNanoseconds = try container.decode(Int64.self, forKey: .modificationTimeNanoseconds)
        birthNanoseconds = try container.decodeIfPresent(Int64.self, forKey: .birthNanoseconds) ?? 0
    }
}
