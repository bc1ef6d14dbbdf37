import Glibc
import SyncEngine

/// An exclusive lock on a domain (`<state_dir>/<name>.lock`, flock), held while a daemon
/// runs it: two daemons on one state DB and one folder would undo each other's work.
/// The kernel drops it when the process dies, so a `kill -9` leaves no stale lock.
final class DomainLock: Sendable {
    let descriptor: Int32

    /// Takes the lock at `path` or throws `cannotSynchronize` naming who to stop.
    init(path: String, domain: String) throws(ProviderError) {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ProviderError(.cannotSynchronize, "cannot open the lock file \(path)", underlying: String(cString: strerror(errno)))
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw ProviderError(.cannotSynchronize,
                                "another tidesync is already syncing the domain \"\(domain)\" (it holds \(path)); stop it first, or use `tidesync status` to ask it")
        }
        descriptor = fd
    }

    deinit { close(descriptor) }
}
