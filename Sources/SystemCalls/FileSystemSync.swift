import CSystemCalls

/// `syncfs(2)`, which Swift's Glibc module does not declare.
public enum FileSystemSync {
    /// Writes back everything dirty on the file system holding `fd` and commits it: 0, or
    /// the errno (a write-back error anywhere on it since `fd` was opened included).
    public static func sync(_ fd: Int32) -> Int32 {
        tidesync_syncfs(fd)
    }
}
