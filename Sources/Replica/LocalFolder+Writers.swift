// Writer checks: is a file (or a file of a bundle) open for writing in some program?
// A file being written is neither uploaded half-written nor replaced under its writer.
import Glibc
import SyncEngine

extension LocalFolder {
    /// A writer opening the file during the moment the lease is held breaks it, and the
    /// kernel signals the lease holder with SIGIO — whose default action ends the process.
    /// Ignored once, before the first lease.
    private static let ignoreLeaseBreaks: Void = { signal(SIGIO, SIG_IGN) }()

    /// Fails with `locked` (retried later) while a process holds the file at `path` (or a
    /// file of the bundle) open for writing: replacing it now would send that program's
    /// next writes to a file no longer in the folder.
    public func requireNoWriter(_ path: RemotePath, kind: ItemKind) throws(ProviderError) {
        let held = Self.stillHeld { kind == .bundle ? bundleHasWriter(path) : isOpenForWriting(path) }
        if held { throw Self.heldError(absolute(path)) }
    }

    /// True when `check` (a writer test) still holds after two short pauses (10 and 100 ms).
    /// A descriptor can outlive its writer's close for a moment: a process that forked
    /// just then keeps a copy until its child runs `exec` — on a loaded machine, tens of
    /// milliseconds. Only a writer that stays is worth a retry later.
    static func stillHeld(_ check: () -> Bool) -> Bool {
        for pause: UInt32 in [10_000, 100_000] {
            guard check() else { return false }
            usleep(pause)
        }
        return check()
    }

    static func heldError(_ target: String) -> ProviderError {
        ProviderError(.locked, "\(target) changed on the server but is open for writing in a program"
                      + (OpenWriters.describe(at: target).map { " (by \($0))" } ?? "")
                      + "; the server's version is brought in once it is closed")
    }

    /// True when some process holds the file at `path` open for writing, so reading it
    /// now could upload it half-written. A read lease (`F_SETLEASE F_RDLCK`) is refused
    /// with EAGAIN exactly while a writer has the file open, and catches `mmap` writers
    /// too. The lease needs ownership of the file or CAP_LEASE; where it cannot be taken
    /// the answer is false and the quiet period alone protects the upload.
    public func isOpenForWriting(_ path: RemotePath) -> Bool {
        Self.isOpenForWriting(atAbsolute: absolute(path))
    }

    /// `isOpenForWriting` of the file at the absolute path `file`.
    static func isOpenForWriting(atAbsolute file: String) -> Bool {
        _ = ignoreLeaseBreaks
        let fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        // F_SETLEASE = F_LINUX_SPECIFIC_BASE + 0; F_RDLCK = 0, F_UNLCK = 2.
        let setLease: Int32 = 1024
        guard fcntl(fd, setLease, Int32(F_RDLCK)) == 0 else { return errno == EAGAIN || errno == EBUSY }
        _ = fcntl(fd, setLease, Int32(F_UNLCK))
        return false
    }

    /// True when some process holds a file of the bundle at `path` open for writing (see
    /// `isOpenForWriting`): the bundle is not read until it is closed.
    public func bundleHasWriter(_ path: RemotePath) -> Bool {
        bundleHasWriter(atAbsolute: absolute(path), path: path)
    }

    /// `bundleHasWriter` of the bundle directory at the absolute path `directory`.
    func bundleHasWriter(atAbsolute directory: String, path: RemotePath) -> Bool {
        guard let bundle = LocalBundle.scan(at: directory, path: path) else { return false }
        return bundle.members.contains { member in
            member.kind == .file && Self.isOpenForWriting(atAbsolute: directory + "/" + member.relativePath)
        }
    }
}
