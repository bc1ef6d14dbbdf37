// Files on demand (issue 15): the placeholder port that brings remote files down as
// dataless placeholders where the policy says so and fills them through a `Hydrator` when
// they are read. Durability contract: a range is recorded in the state DB (with the file's
// materialization and stat, in one transaction) only after the hydrator fsynced its bytes,
// and ranges belong to one version: a fill of a version the server no longer has fails
// (EIO for the reader) and records nothing, and the next pass brings the new version down
// as a new dataless placeholder.
import Foundation
import Glibc
import Logging
import SyncEngine
import SystemCalls

/// The placeholder port of a domain with files on demand: needs a pre-content fanotify
/// group (root, Linux 6.14+, a file system that offers pre-content events). Start it
/// before the first pass and `restore` the recorded placeholders, so every placeholder on
/// disk is hydrated when read.
public final class FanotifyPlaceholders: PlaceholderPort, @unchecked Sendable {
    public let folder: LocalFolder
    public let policy: PlaceholderPolicy
    /// Fills the placeholders when programs read them.
    public let hydrator: Hydrator
    let provider: SyncProvider
    let logger: Logger
    /// Brings down what comes down whole.
    let whole: PlaceholdersOff

    /// A port with a new pre-content group, or `inherited`, the group of an earlier run
    /// (see `Hydrator.start`); throws when the kernel or the privileges do not allow a new
    /// one. Fetches are widened to `alignment`; a reader waits at most `timeout`; `rules`
    /// say which programs hydrate whole on open and which may not hydrate.
    public init(folder: LocalFolder, policy: PlaceholderPolicy, provider: SyncProvider, alignment: Int64,
                timeout: Duration, rules: HydrationRules = HydrationRules(), inherited: PreContentGroup? = nil,
                logger: Logger) throws(PreContentGroup.Failure) {
        let serial = NSLock()
        hydrator = try Hydrator(alignment: alignment, timeout: timeout, rules: rules, inherited: inherited,
                                logger: logger) { record in
            // One at a time: two fills of one file would otherwise write their range sets in
            // either order (the hydrator's set only grows, so the last one holds both).
            serial.withLock { Self.record(record, provider: provider, logger: logger) }
        }
        self.folder = folder
        self.policy = policy
        self.provider = provider
        self.logger = logger
        whole = PlaceholdersOff(folder: folder)
    }

    /// Starts hydrating (the event loop's thread).
    public func start() { hydrator.start() }

    /// Returns once every range readable now is on disk and recorded (a reader goes on
    /// before that).
    public func durable() async { await hydrator.durable() }

    /// Stops the event loop and closes the group (see `Hydrator.stop`): call
    /// `lockPlaceholders` first, or readers get zeros from then on.
    public func stop() { hydrator.stop() }

    private static func record(_ record: HydrationRecord, provider: SyncProvider, logger: Logger) {
        do throws(ProviderError) {
            try provider.recordHydration(of: record.item, present: record.present, version: record.version,
                                         holding: record.state, before: record.before, after: record.stat)
        } catch {
            // The bytes are on disk; a range missing from the DB is only fetched again.
            logger.error("cannot record the hydrated range \(record.range) of item \(record.item): \(error.description)")
        }
    }

    public func bringDown(_ entry: RemoteEntry, at path: RemotePath, replacing: LocalStat?, temporary: URL,
                          bytes: RemoteBytes) async throws(ProviderError) -> PlacedFile {
        let pinned = try provider.isPinned(path)
        let form = policy.form(of: entry, pinned: pinned)
        logger.debug("\(path) comes down \(form == .dataless ? "as a placeholder" : "whole")\(pinned ? " (pinned)" : "")")
        guard form == .dataless, let item = bytes.item, let version = entry.etag,
              let modificationDate = entry.modificationDate else {
            return try await whole.bringDown(entry, at: path, replacing: replacing, temporary: temporary, bytes: bytes)
        }
        // A part left by an earlier whole download of this file is not needed any more.
        unlink(temporary.path)
        let specification = LocalFolder.PlaceholderSpecification(item: item, size: entry.size, modificationDate: modificationDate,
                                                                 version: version)
        let placeholder = KnownPlaceholder(item: item, path: folder.absolute(path), version: version, size: entry.size,
                                           fetch: Self.fetcher(bytes, path: folder.absolute(path)))
        let stat = try folder.makePlaceholder(specification, at: path, replacing: replacing) { fd throws(ProviderError) in
            try hydrator.watch(fd, as: placeholder)
        }
        return PlacedFile(stat: stat, state: .dataless, version: version)
    }

    /// Fetches a range through `bytes` (a ranged GET of the placeholder's version, refused
    /// by the engine when the server has another one) via a scratch file.
    static func fetcher(_ bytes: RemoteBytes, path: String) -> @Sendable (ByteRange, Int32) async throws(ProviderError) -> Void {
        { range, file throws(ProviderError) in
            let written = try await bytes.range(range, file)
            guard written.offset == range.offset, written.length >= range.length else {
                throw ProviderError(.cannotSynchronize, "the server sent \(written) of \(path) for \(range)")
            }
        }
    }

    public func hydrate(_ path: RemotePath, range: ByteRange, bytes: RemoteBytes) async throws(ProviderError) -> Materialization {
        guard let fd = try openPlaceholderForWriting(path) else { return .materialized }
        defer { close(fd) }
        return try await hydrator.hydrate(range, of: fd)
    }

    /// Fetches every byte a placeholder lacks (the daemon's own reads are let through
    /// unfilled by the event loop, so it fills first). A file no hydrator knows that is
    /// tagged as a placeholder with holes is refused: its holes would be read as zeros.
    public func materialize(_ path: RemotePath, bytes: RemoteBytes) async throws(ProviderError) -> PlacedFile {
        guard let fd = try openPlaceholderForWriting(path) else {
            let fd = try openFile(path, writable: false)
            defer { close(fd) }
            if folder.holdsUnfetchedBytes(path) {
                throw ProviderError(.cannotSynchronize, "\(folder.absolute(path)) is a placeholder changed while tidesync was not "
                                    + "running, and its missing bytes cannot be told from the changed ones; it is not read")
            }
            return PlacedFile(stat: Hydrator.localStat(of: fd), state: .materialized, version: nil)
        }
        defer { close(fd) }
        let state = try await hydrator.hydrate(ByteRange(offset: 0, length: Hydrator.localStat(of: fd).size), of: fd)
        return PlacedFile(stat: Hydrator.localStat(of: fd), state: state, version: nil)
    }

    public func state(of path: RemotePath) throws(ProviderError) -> Materialization {
        let fd = try openFile(path, writable: false)
        defer { close(fd) }
        return knownPlaceholder(fd)?.placeholder.state ?? .materialized
    }

    /// Marks the placeholders the state DB records (after a restart the kernel has no marks)
    /// and registers them with the ranges they hold. One whose file is not the recorded one
    /// any more (another inode, size or mtime, or another item's tag) is left alone and
    /// logged: the scan sees it as the local change it is. Returns how many were marked.
    /// Processes that opened a file before its mark read zeros (facts §0.3).
    @discardableResult
    public func restoreRecorded() throws(ProviderError) -> Int {
        var marked = 0
        for recorded in try provider.recordedPlaceholders() {
            do throws(ProviderError) {
                if try restore(recorded, bytes: remoteBytes(of: recorded.record)) { marked += 1 }
            } catch {
                logger.warning("\(folder.absolute(recorded.path)) is not hydrated when read: \(error.message)")
            }
        }
        return marked
    }

    /// The engine's downloads of the recorded version of `record`, found by its identifier.
    func remoteBytes(of record: ItemRecord) -> RemoteBytes {
        let provider = provider, id = record.id, version = ItemVersion(content: record.remoteETag)
        return RemoteBytes(whole: { destination async throws(ProviderError) -> ETag? in
            try await provider.fetchContents(for: id, version: version, into: destination, progress: nil).version.content
        }, range: { range, file async throws(ProviderError) -> ByteRange in
            try await provider.fetchPartialContents(for: id, version: version, minimalRange: range, alignment: 1,
                                                    intoDescriptor: file, progress: nil)
        }, item: id)
    }

    private func restore(_ recorded: RecordedPlaceholder, bytes: RemoteBytes) throws(ProviderError) -> Bool {
        let absolute = folder.absolute(recorded.path)
        let fd = open(absolute, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let stat = Hydrator.localStat(of: fd)
        guard stat == recorded.record.local, ExtendedAttributes.get(LocalFolder.PlaceholderAttribute.item, of: fd) == recorded.record.id.rawValue else {
            logger.warning("\(absolute) changed while tidesync was not running; it is synced as a local change, not hydrated\(Self.lockedNote(fd))")
            return false
        }
        try hydrator.watch(fd, as: KnownPlaceholder(item: recorded.record.id, path: absolute, version: recorded.record.remoteETag,
                                                    size: recorded.record.size, present: recorded.present,
                                                    fetch: Self.fetcher(bytes, path: absolute)))
        // Marked first: from here on a read is hydrated, so the mode a stop took comes back.
        PlaceholderLock.unlock(fd)
        return true
    }

    /// A file is opened for writing only when it is a placeholder this hydrator fills: an
    /// open for writing of any other file would tell the watcher it changed (its close is an
    /// IN_CLOSE_WRITE, and each upload would bring another pass) and fails on a running
    /// program (ETXTBSY).
    private func openFile(_ path: RemotePath, writable: Bool) throws(ProviderError) -> Int32 {
        let fd = open(folder.absolute(path), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw LocalFolder.error(errno, "cannot open \(folder.absolute(path))") }
        return fd
    }

    /// `path` opened for writing when it is a known placeholder (checked on a read-only
    /// descriptor first, and again on the writable one, so a file that replaced it in
    /// between is never written into); nil for any other file.
    func openPlaceholderForWriting(_ path: RemotePath) throws(ProviderError) -> Int32? {
        let probe = try openFile(path, writable: false)
        let known = knownPlaceholder(probe) != nil
        close(probe)
        guard known else { return nil }
        let fd = try openFile(path, writable: true)
        _ = knownPlaceholder(fd)  // forgets a stale entry: another file is never written into
        return fd
    }
}
