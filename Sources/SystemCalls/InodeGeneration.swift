import Glibc

/// The generation number of the inode at a path (`FS_IOC_GETVERSION`): a file system that
/// hands a freed inode number to a new file gives it a new generation (ext4, XFS, btrfs,
/// tmpfs), so inode and generation together tell a folder from one made again in its place
/// — the inode number alone does not (ext4 gives a folder deleted and made again at once
/// its old number back).
public enum InodeGeneration {
    /// `_IOR('v', 1, long)`.
    private static let request: UInt = 0x8008_7601

    /// The generation, or nil where the file system does not keep one (or the path cannot
    /// be opened).
    public static func of(_ path: String) -> UInt32? {
        #if os(Linux)
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var generation: Int = 0
        guard ioctl(fd, request, &generation) == 0 else { return nil }
        return UInt32(truncatingIfNeeded: generation)
        #else
        return nil
        #endif
    }
}
