// Never a silent zero while the daemon is stopped (issue 15 item 4): at a clean stop every
// placeholder that is not whole becomes mode 000, its real mode kept in the xattr
// `user.tidesync.mode`, so a reader gets EACCES instead of the zeros of its holes (root
// bypasses the mode). The next start marks it first and then gives the mode back. Crash
// contract: the xattr is written before the chmod and removed after the mode is back, so a
// kill at any point leaves either the real mode, or mode 000 with the real mode in the
// xattr; the mode is given back only to a file whose permission bits are still 000, and
// only files the hydrator holds as placeholders are ever locked: a user's whole file never.
import Glibc
import Logging
import SystemCalls

/// Locking placeholders at a clean stop and unlocking them at the next start.
public enum PlaceholderLock {
    /// The xattr holding a locked placeholder's real mode, in octal.
    public static let attribute = "user.tidesync.mode"

    /// Makes the file at `path` mode 000 when `isPlaceholder` accepts its identity, keeping
    /// its mode in the xattr. Opened `O_PATH`, which raises no fanotify event (the event
    /// loop may be gone), and changed through `/proc/self/fd`. True when it was locked.
    static func lock(_ path: String, logger: Logger, isPlaceholder: (FileIdentity) -> Bool) -> Bool {
        let pathOnly: Int32 = 0o10_000_000  // O_PATH, which Swift's Glibc module does not export
        let fd = open(path, pathOnly | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
              isPlaceholder(FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))) else { return false }
        let mode = info.st_mode & 0o7777
        guard mode & 0o777 != 0 else { return false }  // unreadable already: nothing to give back later
        let link = "/proc/self/fd/\(fd)"
        guard ExtendedAttributes.set(attribute, String(mode, radix: 8), atPath: link) == 0, chmod(link, 0) == 0 else {
            logger.warning("\(path) stays readable while tidesync is stopped (its holes read as zeros): \(String(cString: strerror(errno)))")
            return false
        }
        return true
    }

    /// Gives the file open as `file` its mode back when it was locked and is still mode 000
    /// (a mode the user set meanwhile is kept), and removes the xattr. Returns the mode
    /// given back, or nil.
    @discardableResult
    static func unlock(_ file: Int32) -> mode_t? {
        guard let saved = ExtendedAttributes.get(attribute, of: file) else { return nil }
        var info = stat()
        var restored: mode_t?
        if let mode = mode_t(saved, radix: 8), mode <= 0o7777, fstat(file, &info) == 0, info.st_mode & 0o7777 == 0,
           fchmod(file, mode) == 0 {
            restored = mode
        }
        ExtendedAttributes.remove(attribute, of: file)
        return restored
    }

    /// The mode kept on the file open as `file` when it is locked (mode 000 and the xattr).
    static func lockedMode(of file: Int32) -> String? {
        var info = stat()
        guard let saved = ExtendedAttributes.get(attribute, of: file), fstat(file, &info) == 0, info.st_mode & 0o7777 == 0 else {
            return nil
        }
        return saved
    }
}
