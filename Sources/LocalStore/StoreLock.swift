import Glibc
import SyncEngine

/// An exclusive `flock` on the store's lock file. Every version check and the write it
/// guards happen while it is held, so the check is as strict as WebDAV's `If-Match`
/// for every tidesync process sharing the store.
struct StoreLock {
    let path: String

    /// Runs `body` holding the lock. The lock is per open file description, so it
    /// also excludes other tasks of this process.
    func withLock<T>(_ body: () throws(ProviderError) -> T) throws(ProviderError) -> T {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SystemError.providerError(errno, "cannot open the store's lock file \(path)") }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw SystemError.providerError(errno, "cannot lock \(path)") }
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }
}
