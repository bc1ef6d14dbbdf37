// The user's commands on files on demand (issue 15 item 7): evict a file, say what a file
// holds, hydrate a range in pieces a progress bar can follow. Durability contract of an
// eviction: the file is registered and marked for hydration *before* its bytes are punched
// out (a reader then never sees zeros: its read waits for the fetch), the remote mtime is
// put back, the file is fsynced, and only then is it recorded dataless with its new stat in
// one transaction. A file some program holds open is not evicted: a descriptor opened
// before the mark raises no events and would read zeros (facts §0.3, §1.5).
import Foundation
import Glibc
import SyncEngine
import SystemCalls

/// What a file holds, for `tidesync file-status`.
public struct HeldBytes: Sendable, Equatable {
    public var state: Materialization
    /// Bytes of the file's version on disk.
    public var present: Int64
    public var size: Int64
}

extension FanotifyPlaceholders {
    /// Frees the bytes of the file at `path`, keeping it as a dataless placeholder of the
    /// same size and mtime that is hydrated when read. Refused, with the reason, for pinned
    /// and `keep_local` files, files with changes not synced yet, and files a program holds
    /// open or tidesync is filling.
    public func evictNow(_ path: RemotePath) throws(ProviderError) -> PlacedFile {
        let record = try evictable(path)
        let absolute = folder.absolute(path)
        let fd = open(absolute, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw LocalFolder.error(errno, "cannot open \(absolute)") }
        defer { close(fd) }
        let before = Hydrator.localStat(of: fd)
        guard before == record.local else { throw Self.unsynced(absolute) }
        if let known = knownPlaceholder(fd)?.placeholder, known.state == .dataless {
            return PlacedFile(stat: before, state: .dataless, version: record.remoteETag)
        }
        let identity = try fileIdentity(of: fd)
        guard !hydrator.isFilling(identity) else {
            throw ProviderError(.locked, "\(absolute) is being downloaded; evict it once that is done")
        }
        try markDataless(fd, record: record, path: absolute, size: before.size)
        let after = try punchOut(fd, identity: identity, before: before, path: absolute)
        try provider.recordEviction(of: record.id, version: record.remoteETag, before: before, after: after)
        return PlacedFile(stat: after, state: .dataless, version: record.remoteETag)
    }

    /// Punches the marked file's bytes out, puts its mtime back and fsyncs it; returns its
    /// stat. When it cannot, the mark goes again (the bytes are still there).
    private func punchOut(_ fd: Int32, identity: FileIdentity, before: LocalStat, path: String) throws(ProviderError) -> LocalStat {
        do throws(ProviderError) {
            try Self.punch(fd, size: before.size, path: path)
        } catch {
            try? hydrator.group.unmark(fd, for: .preAccess)
            hydrator.forget(identity)
            throw error
        }
        Hydrator.restoreModificationTime(of: fd, before.modificationTimeNanoseconds)
        guard fsync(fd) == 0 else { throw LocalFolder.error(errno, "cannot write \(path)") }
        return Hydrator.localStat(of: fd)
    }

    /// The record of the file at `path` when nothing forbids evicting it; else why not.
    private func evictable(_ path: RemotePath) throws(ProviderError) -> ItemRecord {
        let absolute = folder.absolute(path)
        guard let id = try provider.itemID(at: path), let record = try provider.itemRecord(id), record.kind == .file,
              record.remoteETag != nil, record.local != nil else { throw Self.unsynced(absolute) }
        if try provider.isPinned(path) {
            throw ProviderError(.cannotSynchronize, "\(absolute) is pinned (always kept downloaded); `tidesync unpin` it first")
        }
        if policy.keepLocal.excludes(path) {
            throw ProviderError(.cannotSynchronize, "\(absolute) matches keep_local in the configuration: it is always kept downloaded")
        }
        if LocalFolder.stillHeld({ LocalFolder.isOpenForWriting(atAbsolute: absolute) }) {
            throw ProviderError(.locked, "\(absolute) is open for writing" + (OpenWriters.describe(at: absolute).map { " (by \($0))" } ?? "")
                                + "; close it first")
        }
        if let holders = OpenWriters.describe(at: absolute, writersOnly: false) {
            throw ProviderError(.locked, "\(absolute) is open in a program (by \(holders)), which would read zeros where its "
                                + "bytes were; close it first")
        }
        return record
    }

    static func unsynced(_ absolute: String) -> ProviderError {
        ProviderError(.cannotSynchronize, "\(absolute) has changes not synced yet; it can be evicted once they are uploaded")
    }

    /// Tags the file as a dataless placeholder of its recorded version and registers and
    /// marks it, so every read from now on is filled from the server.
    private func markDataless(_ fd: Int32, record: ItemRecord, path: String, size: Int64) throws(ProviderError) {
        let attributes = [(LocalFolder.PlaceholderAttribute.item, record.id.rawValue),
                          (LocalFolder.PlaceholderAttribute.version, record.remoteETag?.description ?? ""),
                          (LocalFolder.PlaceholderAttribute.state, Materialization.dataless.rawValue)]
        for (name, value) in attributes where ExtendedAttributes.set(name, value, on: fd) != 0 {
            throw LocalFolder.error(errno, "cannot tag \(path) with \(name)")
        }
        try hydrator.watch(fd, as: KnownPlaceholder(item: record.id, path: path, version: record.remoteETag, size: size,
                                                    fetch: Self.fetcher(remoteBytes(of: record), path: path)))
    }

    /// Punches out every data block of the file, its size kept; the last block is punched
    /// whole (an unaligned punch only zeroes a block, which stays data, facts §2.4).
    private static func punch(_ fd: Int32, size: Int64, path: String) throws(ProviderError) {
        var info = Glibc.stat()
        guard fstat(fd, &info) == 0 else { throw LocalFolder.error(errno, "cannot look at \(path)") }
        let block = max(Int64(info.st_blksize), 4096)
        let length = (size + block - 1) / block * block
        guard length == 0 || FileSpace.punch(fd, offset: 0, length: length) == 0 else {
            throw LocalFolder.error(errno, "cannot free the bytes of \(path) (its file system may not punch holes)")
        }
    }

    /// What the file at `path` holds now; `record` is its row (nil: a file not synced yet,
    /// whole as far as tidesync knows).
    public func heldBytes(_ path: RemotePath, record: ItemRecord?) -> HeldBytes {
        let fd = open(folder.absolute(path), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        defer { if fd >= 0 { close(fd) } }
        let size = fd >= 0 ? Hydrator.localStat(of: fd).size : record?.size ?? 0
        if fd >= 0, let known = knownPlaceholder(fd)?.placeholder {
            return HeldBytes(state: known.state, present: min(known.present.byteCount, size), size: size)
        }
        return HeldBytes(state: .materialized, present: size, size: size)
    }

    /// Fetches what `range` of the file at `path` lacks, `chunk` bytes (a multiple of the
    /// alignment) at a time, telling `progress` after each piece how many bytes of `range`
    /// are on disk. Returns what the file holds then.
    public func fill(_ path: RemotePath, range: ByteRange, chunk: Int64,
                     progress: @Sendable (Int64) -> Void) async throws(ProviderError) -> Materialization {
        guard let fd = try openPlaceholderForWriting(path) else {
            progress(range.length)
            return .materialized
        }
        defer { close(fd) }
        guard let (identity, known) = knownPlaceholder(fd) else {
            progress(range.length)
            return .materialized
        }
        var state = known.state
        var offset = range.offset
        while offset < range.end, hydrator.placeholder(identity) != nil {
            let piece = ByteRange(offset: offset, length: min(chunk, range.end - offset))
            state = try await hydrator.hydrate(piece, of: fd)
            progress(present(in: range, of: identity))
            offset = piece.end
        }
        progress(present(in: range, of: identity))
        return state
    }

    /// The bytes of `range` on disk in the file with `identity` (all, once it is whole).
    private func present(in range: ByteRange, of identity: FileIdentity) -> Int64 {
        guard let known = hydrator.placeholder(identity) else { return range.length }
        return range.length - known.present.missing(in: range).reduce(0) { $0 + $1.length }
    }

    /// The placeholder the file open as `fd` is, or nil. A registered identity whose file
    /// is not tagged with the registered item is a stale entry (the placeholder was replaced
    /// and its inode number used again): it is forgotten, and never written into.
    func knownPlaceholder(_ fd: Int32) -> (identity: FileIdentity, placeholder: KnownPlaceholder)? {
        guard let identity = try? fileIdentity(of: fd), let known = hydrator.placeholder(identity) else { return nil }
        guard ExtendedAttributes.get(LocalFolder.PlaceholderAttribute.item, of: fd) == known.item.rawValue else {
            hydrator.forget(identity)
            return nil
        }
        return (identity, known)
    }

    private func fileIdentity(of fd: Int32) throws(ProviderError) -> FileIdentity {
        var info = Glibc.stat()
        guard fstat(fd, &info) == 0 else { throw LocalFolder.error(errno, "cannot look at a file") }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    public func evict(_ path: RemotePath) async throws(ProviderError) -> PlacedFile {
        try evictNow(path)
    }
}
