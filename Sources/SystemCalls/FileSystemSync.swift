import CSystemCalls

/// `syncfs(2)` and `fstatfs(2)`'s file-system type, which Swift's Glibc module does not declare.
public enum FileSystemSync {
    /// Writes back everything dirty on the file system holding `fd` and commits it: 0, or
    /// the errno (a write-back error anywhere on it since `fd` was opened included).
    public static func sync(_ fd: Int32) -> Int32 {
        tidesync_syncfs(fd)
    }

    /// The type (a magic number, `statfs(2)`) of the file system holding `fd`; nil when
    /// it cannot be told.
    public static func type(of fd: Int32) -> UInt64? {
        let type = tidesync_filesystem_type(fd)
        return type < 0 ? nil : UInt64(type)
    }
}
