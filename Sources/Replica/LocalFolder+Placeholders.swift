// Dataless placeholders on disk (DESIGN.md, "Dataless placeholders"). Durability contract:
// a placeholder is made under a temporary name (`.tidesync-part-UUID`, which the scanner and
// watcher never report) as a sparse file of the remote size with no data blocks, tagged with
// the `user.tidesync.*` xattrs, marked for on-access hydration while it is still invisible
// (a descriptor opened before its mark would read zeros, facts §0.3), given the remote
// mtime and fsynced; only then is it put in place, with the guards of `install`, and the
// folder fsynced. A crash leaves at most the temporary, which the next pass removes.
import Glibc
import Foundation
import SyncEngine
import SystemCalls

extension LocalFolder {
    /// What a dataless placeholder stands for: one version of one remote file.
    public struct PlaceholderSpecification: Sendable, Equatable {
        /// The item, tagged on the file as `user.tidesync.id`.
        public var item: ItemIdentifier
        /// The remote size, in bytes: the placeholder's size.
        public var size: Int64
        /// The remote mtime, given to the placeholder and kept through its hydration.
        public var modificationDate: Date
        /// The version its bytes will belong to; nil when the server named none.
        public var version: ETag?

        /// The placeholder of `version` of `item`.
        public init(item: ItemIdentifier, size: Int64, modificationDate: Date, version: ETag?) {
            self.item = item
            self.size = size
            self.modificationDate = modificationDate
            self.version = version
        }
    }

    /// The xattr names of a placeholder (hints for people and tools; the state DB is the truth).
    public enum PlaceholderAttribute {
        /// The item identifier.
        public static let item = "user.tidesync.id"
        /// `dataless`, `partial` or `materialized`.
        public static let state = "user.tidesync.state"
        /// The ETag the bytes belong to, as the server sent it (empty when it sent none).
        public static let version = "user.tidesync.version"
    }

    /// Makes a dataless placeholder of `specification` at `path`, replacing the file that
    /// had `replacing` (nil: nothing may be there). `mark` gets the placeholder's descriptor
    /// before it becomes visible, to mark it for on-access hydration; when it throws, nothing
    /// is put in place. Returns the placeholder's stat.
    public func makePlaceholder(_ specification: PlaceholderSpecification, at path: RemotePath, replacing: LocalStat?,
                                mark: (Int32) throws(ProviderError) -> Void) throws(ProviderError) -> LocalStat {
        let temporary = temporaryURL(beside: path).path
        let made: LocalStat
        do throws(ProviderError) {
            made = try prepareDataless(specification, at: temporary, path: path, mark: mark)
        } catch {
            unlink(temporary)
            throw error
        }
        if let replacing {
            try replace(path, with: temporary, replacing: replacing, kind: .file)
        } else {
            try renameNew(temporary, to: path)
        }
        syncFolder(of: absolute(path))
        guard let now = entry(at: path), now.stat.inode == made.inode else {
            throw ProviderError(.versionMismatch, "\(absolute(path)) was replaced right after its placeholder was made; it will be looked at again")
        }
        // As made, not as now: a write since then is a change of the user's (see `install`).
        return made
    }

    /// Creates the temporary file, sparse, tagged, marked, timed and fsynced.
    private func prepareDataless(_ specification: PlaceholderSpecification, at temporary: String, path: RemotePath,
                                 mark: (Int32) throws(ProviderError) -> Void) throws(ProviderError) -> LocalStat {
        let fd = open(temporary, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Self.error(errno, "cannot create a placeholder beside \(absolute(path))") }
        defer { close(fd) }
        guard ftruncate(fd, off_t(specification.size)) == 0 else {
            throw Self.error(errno, "cannot size the placeholder of \(absolute(path))")
        }
        let attributes = [(PlaceholderAttribute.item, specification.item.rawValue),
                          (PlaceholderAttribute.state, Materialization.dataless.rawValue),
                          (PlaceholderAttribute.version, specification.version?.description ?? "")]
        for (name, value) in attributes where ExtendedAttributes.set(name, value, on: fd) != 0 {
            throw Self.error(errno, "cannot tag the placeholder of \(absolute(path)) with \(name)")
        }
        try mark(fd)
        Self.setModificationDate(of: fd, specification.modificationDate)
        guard fsync(fd) == 0 else { throw Self.error(errno, "cannot write the placeholder of \(absolute(path))") }
        guard let info = StatX.of(descriptor: fd) else { throw Self.error(errno, "cannot look at the placeholder of \(absolute(path))") }
        return LocalStat(info)
    }

    /// Renames `temporary` to the free name `path` (`RENAME_NOREPLACE`: a file that appeared
    /// meanwhile is never replaced); removes `temporary` when it cannot.
    private func renameNew(_ temporary: String, to path: RemotePath) throws(ProviderError) {
        let target = absolute(path)
        guard RenameAt2.rename(temporary, target, flags: RenameAt2.noReplace) != 0 else { return }
        let code = errno
        // A file system without RENAME_NOREPLACE: check, then rename (a narrow race remains).
        if code == EINVAL || code == ENOSYS, entry(at: path) == nil, rename(temporary, target) == 0 { return }
        unlink(temporary)
        if code == EEXIST {
            guard listsExactly(path) else { throw foldedName(path) }
            throw ProviderError(.versionMismatch, "\(target) appeared since it was looked at; it is kept and looked at again")
        }
        throw Self.error(code, "cannot put the placeholder \(target) in place")
    }

    /// Gives the file open as `file` the modification time `date` (atime untouched).
    static func setModificationDate(of file: Int32, _ date: Date) {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        let omit = timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2)  // UTIME_OMIT
        var times = [omit, timespec(tv_sec: Int(seconds), tv_nsec: Int((date.timeIntervalSince1970 - seconds) * 1e9))]
        _ = futimens(file, &times)
    }

    /// True when the file at `path` holds no data blocks at all (SEEK_DATA finds none): a
    /// dataless placeholder, or an empty file. Nil when it cannot be opened. Raises no
    /// pre-content event (an open and a seek read nothing).
    public func holdsNoData(_ path: RemotePath) -> Bool? {
        let fd = open(absolute(path), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let seekData: Int32 = 3  // SEEK_DATA, which Swift's Glibc module does not export
        return lseek(fd, 0, seekData) < 0 && errno == ENXIO
    }

    /// True when the file at `path` is tagged as a placeholder that is not whole and still
    /// has a hole before its end: bytes never fetched, which read as zeros where no hydrator
    /// fills them. A file a program rewrote whole has no hole, whatever its tag says.
    /// Raises no pre-content event.
    public func holdsUnfetchedBytes(_ path: RemotePath) -> Bool {
        let fd = open(absolute(path), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let state = ExtendedAttributes.get(PlaceholderAttribute.state, of: fd)
        guard state == Materialization.dataless.rawValue || state == Materialization.partial.rawValue else { return false }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_size > 0 else { return false }
        let seekHole: Int32 = 4  // SEEK_HOLE, which Swift's Glibc module does not export
        let hole = lseek(fd, 0, seekHole)
        return hole >= 0 && hole < info.st_size
    }

    /// The value of the placeholder xattr `name` on the file at `path`, or nil.
    public func placeholderAttribute(_ name: String, of path: RemotePath) -> String? {
        let fd = open(absolute(path), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return ExtendedAttributes.get(name, of: fd)
    }
}
