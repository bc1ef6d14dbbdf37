// Durability contract: a downloaded file is written to a temporary file beside its target
// (`.tidesync-part-UUID`, a name the scanner and watcher never report), fsynced by the
// engine, given the remote mtime, and renamed into place only while the target still has the
// stat the plan saw (or, for a new file, while nothing is there: link(2) refuses to replace);
// the folder is fsynced after the rename. A crash leaves at most the temporary file, which
// the journal names and the next pass removes — or, a download's part (`partURL`), resumes.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ContentHash
import Foundation
import SyncEngine
import SystemCalls

/// The sync folder, as the reconciliation writes to it. Every write is guarded by what the
/// plan saw (a stat, or "nothing here"): when the user changed something meanwhile, the
/// write fails with `versionMismatch` and leaves it alone, and the next plan decides again.
public struct LocalFolder: Sendable {
    /// The sync folder, absolute, without a trailing slash.
    public let root: String
    /// Bundles are one item: looked at, replaced and deleted whole.
    public let bundles: BundleRule

    public init(root: String, bundles: BundleRule = .standard) {
        self.root = root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root
        self.bundles = bundles
    }

    /// The prefix of the temporary files downloads are written to.
    public static let temporaryPrefix = ".tidesync-part-"

    /// True for a name this folder gives its temporaries: the prefix and a UUID.
    public static func isTemporary(_ name: String) -> Bool {
        name.hasPrefix(temporaryPrefix) && UUID(uuidString: String(name.dropFirst(temporaryPrefix.count))) != nil
    }

    public func absolute(_ path: RemotePath) -> String {
        path.isRoot ? root : root + "/" + path.components.joined(separator: "/")
    }

    /// What is at `path` now (lstat), or nil; a bundle as one item with its `LocalBundle` stat.
    public func entry(at path: RemotePath) -> LocalScanEntry? {
        guard let entry = LocalScanner.entry(at: absolute(path), path: path) else { return nil }
        guard entry.kind == .folder, bundles.isBundle(name: path.name), bundles.enclosingBundle(of: path) == nil,
              let bundle = LocalBundle.scan(at: absolute(path), path: path) else { return entry }
        return LocalScanEntry(path: path, kind: .bundle, stat: bundle.stat)
    }

    /// The bundle at `path` as it is now, walked; nil when no bundle is there.
    public func bundle(at path: RemotePath) -> LocalBundle? {
        LocalBundle.scan(at: absolute(path), path: path)
    }

    /// A fresh temporary file name in the folder of `path` (nothing is created).
    public func temporaryURL(beside path: RemotePath) -> URL {
        URL(fileURLWithPath: absolute(path.parent) + "/" + Self.temporaryPrefix + UUID().uuidString)
    }

    /// The temporary file a download of `version` of `path` is written to, found again by
    /// the next attempt to resume it: `.tidesync-part-` and a name-based (version 5) UUID
    /// from a SHA-256 of the name and the version. A fresh temporary is a random (version 4)
    /// UUID, so `isResumablePart` tells the two apart; another version gets another name.
    public func partURL(beside path: RemotePath, version: ETag) -> URL {
        var digest = ContentDigest(.sha256)
        digest.update(Array("tidesync-part\u{0}\(path.name)\u{0}\(version.value)".utf8))
        let hex = Array(digest.hex().utf8)
        var bytes = (0..<16).map { UInt8(String(decoding: hex[2 * $0 ..< 2 * $0 + 2], as: UTF8.self), radix: 16) ?? 0 }
        bytes[6] = bytes[6] & 0x0F | 0x50
        bytes[8] = bytes[8] & 0x3F | 0x80
        let uuid = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                               bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
        return URL(fileURLWithPath: absolute(path.parent) + "/" + Self.temporaryPrefix + uuid.uuidString)
    }

    /// True for a part a download may resume (`partURL`), false for a fresh temporary.
    public static func isResumablePart(_ name: String) -> Bool {
        guard isTemporary(name) else { return false }
        let token = name.dropFirst(temporaryPrefix.count)
        return token[token.index(token.startIndex, offsetBy: 14)] == "5"
    }

    /// Moves the downloaded `temporary` to `path`, giving it `modificationDate`; `replacing`
    /// is the stat the item at `path` must still have (nil: nothing may be there). Returns
    /// the stat of the installed file.
    public func install(_ temporary: URL, at path: RemotePath, replacing: LocalStat?,
                        modificationDate: Date?) throws(ProviderError) -> LocalStat {
        let target = absolute(path)
        if let modificationDate { setModificationDate(temporary.path, modificationDate) }
        guard let installed = LocalScanner.entry(at: temporary.path, path: path) else {
            throw ProviderError(.cannotSynchronize, "the downloaded file \(temporary.path) vanished before it was installed")
        }
        if let replacing {
            try replace(path, with: temporary.path, replacing: replacing, kind: .file)
        } else {
            do { try linkNew(temporary.path, at: target, path: path) } catch {
                unlink(temporary.path)  // ours; the item at the target is left as it was
                throw error
            }
        }
        syncFolder(of: target)
        guard let now = entry(at: path), now.stat.inode == installed.stat.inode else {
            throw ProviderError(.versionMismatch, "\(target) was replaced right after it was downloaded; it will be looked at again")
        }
        return now.stat
    }

    /// Creates the folder at `path`; an existing folder there counts as done.
    public func makeFolder(at path: RemotePath) throws(ProviderError) -> LocalStat {
        let target = absolute(path)
        if mkdir(target, 0o755) != 0 {
            guard errno == EEXIST else { throw Self.error(errno, "cannot create the folder \(target)") }
            // A folder that folds names would merge the two folders' contents into one.
            guard listsExactly(path) else { throw foldedName(path) }
        }
        guard let made = entry(at: path), made.kind == .folder else {
            throw ProviderError(.versionMismatch, "something other than a folder is at \(target); it is kept")
        }
        syncFolder(of: target)
        return made.stat
    }

    /// Creates (or replaces, when the link there still has `replacing`) the symlink at `path`,
    /// made first under the name `temporary` (beside it).
    public func makeSymlink(at path: RemotePath, target linkTarget: String, replacing: LocalStat?,
                            temporary temporaryURL: URL) throws(ProviderError) -> LocalStat {
        let target = absolute(path)
        let temporary = temporaryURL.path
        guard symlink(linkTarget, temporary) == 0 else { throw Self.error(errno, "cannot create a symlink beside \(target)") }
        do {
            if let replacing {
                try require(path, holds: replacing, kind: .symlink)
                try renameOrThrow(temporary, to: target)
            } else {
                try linkNew(temporary, at: target, path: path)
            }
        } catch {
            unlink(temporary)
            throw error
        }
        syncFolder(of: target)
        guard let made = entry(at: path), made.kind == .symlink else {
            throw ProviderError(.versionMismatch, "\(target) was replaced right after it was made")
        }
        return made.stat
    }

    /// Renames the item at `source` to `destination` (which must be free) if it still has
    /// `expected` (folders and symlinks: the same inode). Returns its stat afterwards.
    @discardableResult
    public func move(from source: RemotePath, to destination: RemotePath,
                     expected: LocalStat) throws(ProviderError) -> LocalStat {
        guard let now = entry(at: source) else {
            throw ProviderError(.versionMismatch, "\(absolute(source)) is gone; the move is decided again")
        }
        try require(source, holds: expected, kind: now.kind)
        guard entry(at: destination) == nil else {
            throw ProviderError(.versionMismatch, "\(absolute(destination)) is taken; the move is decided again")
        }
        try renameOrThrow(absolute(source), to: absolute(destination))
        syncFolder(of: absolute(destination))
        if source.parent != destination.parent { syncFolder(of: absolute(source)) }
        return entry(at: destination)?.stat ?? expected
    }

    /// Deletes the item at `path` if it still has `expected`. A folder's contents go one by
    /// one, each only while `isUnchanged` says it is what was recorded; anything else stays,
    /// with the folders holding it. Returns true when nothing is left at `path`.
    public func delete(_ path: RemotePath, expected: LocalStat?,
                       isUnchanged: (LocalScanEntry) -> Bool) throws(ProviderError) -> Bool {
        guard let now = entry(at: path) else { return true }
        if let expected { try require(path, holds: expected, kind: now.kind) }
        if now.kind == .bundle {
            try removeTree(path)
            return true
        }
        if now.kind != .folder {
            guard unlink(absolute(path)) == 0 || errno == ENOENT else { throw Self.error(errno, "cannot delete \(absolute(path))") }
            syncFolder(of: absolute(path))
            return true
        }
        let emptied = try deleteContents(of: path, isUnchanged: isUnchanged)
        guard emptied, rmdir(absolute(path)) == 0 || errno == ENOENT else { return false }
        syncFolder(of: absolute(path))
        return true
    }

    private func deleteContents(of folder: RemotePath, isUnchanged: (LocalScanEntry) -> Bool) throws(ProviderError) -> Bool {
        let (entries, unreadable) = try children(of: folder)
        var emptied = !unreadable
        for child in entries {
            // A download's part kept for resuming is ours and goes with its folder.
            if Self.isResumablePart(child.path.name), unlink(absolute(child.path)) == 0 || errno == ENOENT { continue }
            guard isUnchanged(child) else { emptied = false; continue }
            if child.kind == .folder {
                if try deleteContents(of: child.path, isUnchanged: isUnchanged), rmdir(absolute(child.path)) == 0 { continue }
                emptied = false
            } else if child.kind == .bundle {
                do { try removeTree(child.path) } catch { emptied = false }
            } else if unlink(absolute(child.path)) != 0, errno != ENOENT {
                emptied = false
            }
        }
        return emptied
    }

    /// Every item directly in `folder`, excluded names included (they keep a folder alive),
    /// and whether it also holds names that cannot be represented (which keep it too).
    func children(of folder: RemotePath) throws(ProviderError) -> (entries: [LocalScanEntry], unreadable: Bool) {
        guard let names = try LocalScanner.names(in: absolute(folder)) else { return ([], false) }
        var result: [LocalScanEntry] = []
        var unreadable = false
        for bytes in names {
            guard let name = String(validating: bytes, as: UTF8.self), let path = try? folder.appending(name) else {
                unreadable = true
                continue
            }
            if let found = entry(at: path) { result.append(found) }
        }
        return (result, unreadable)
    }

    /// True when the file at `path` still has `expected` and holds exactly the bytes of `other`.
    public func contentsEqual(_ path: RemotePath, expected: LocalStat, other: URL) throws(ProviderError) -> Bool {
        try require(path, holds: expected, kind: .file)
        let first = open(absolute(path), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard first >= 0 else { throw Self.error(errno, "cannot read \(absolute(path))") }
        defer { close(first) }
        let second = open(other.path, O_RDONLY | O_CLOEXEC)
        guard second >= 0 else { throw Self.error(errno, "cannot read \(other.path)") }
        defer { close(second) }
        let size = 1 << 20
        let a = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        let b = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        defer { a.deallocate(); b.deallocate() }
        while true {
            let countA = Self.readFully(first, a, size), countB = Self.readFully(second, b, size)
            guard countA >= 0, countB >= 0 else { throw Self.error(errno, "cannot compare \(absolute(path))") }
            if countA != countB || memcmp(a, b, countA) != 0 { return false }
            if countA == 0 { break }
        }
        try require(path, holds: expected, kind: .file)
        return true
    }

    /// The checksum of the file at `path`, which must have `expected` before and after it
    /// is read (`versionMismatch` otherwise).
    public func checksum(_ path: RemotePath, expected: LocalStat,
                         algorithm: ContentChecksum.Algorithm) throws(ProviderError) -> String {
        try require(path, holds: expected, kind: .file)
        let hex = try Self.digest(ofFileAt: absolute(path), algorithm)
        try require(path, holds: expected, kind: .file)
        return hex
    }

    /// The `algorithm` digest (lowercase hex) of the file at `absolutePath`, read without
    /// following a symlink, 1 MiB at a time. Public for packaging/bench/HashBench.
    public static func digest(ofFileAt absolutePath: String, _ algorithm: DigestAlgorithm) throws(ProviderError) -> String {
        let fd = open(absolutePath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw error(errno, "cannot read \(absolutePath)") }
        defer { close(fd) }
        let size = 1 << 20
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        defer { buffer.deallocate() }
        var digest = ContentDigest(algorithm)
        while true {
            let count = readFully(fd, buffer, size)
            guard count >= 0 else { throw error(errno, "cannot read \(absolutePath)") }
            if count == 0 { break }
            digest.update(UnsafeRawBufferPointer(start: buffer, count: count))
        }
        return digest.hex()
    }

    /// The content hash a bundle manifest records: `sha256:<hex>`.
    static func contentHash(ofFileAt absolutePath: String) throws(ProviderError) -> String {
        "sha256:" + (try digest(ofFileAt: absolutePath, .sha256))
    }

    // MARK: Building blocks

    /// Throws `versionMismatch` unless the item at `path` is of `kind` and has `expected`
    /// (files and bundles: inode, size and mtime — a bundle's digest; folders and symlinks: the inode).
    func require(_ path: RemotePath, holds expected: LocalStat, kind: ItemKind) throws(ProviderError) {
        guard let now = entry(at: path), now.kind == kind else {
            throw ProviderError(.versionMismatch, "\(absolute(path)) changed since it was looked at; it is kept and looked at again")
        }
        let same = kind == .file || kind == .bundle ? now.stat == expected : now.stat.inode == expected.inode
        guard same else {
            throw ProviderError(.versionMismatch, "\(absolute(path)) changed since it was looked at; it is kept and looked at again")
        }
    }

    /// Puts the downloaded `temporary` (beside `path`) in the place of the file or bundle at
    /// `path`, which must still have `replacing`. One `RENAME_EXCHANGE`, after which the old
    /// item — now under the temporary name, where no program looks for it — is checked once
    /// more: written after the first check, or held open for writing by a process (whose
    /// next writes would go to a file no longer in the folder), it is exchanged back and
    /// the download withdrawn (`versionMismatch` or `locked`: the next pass sees the local
    /// change and keeps both). Otherwise the old item is removed. Where the file system has
    /// no exchange, the old item is renamed aside (a bundle) or replaced (a file) after the
    /// check.
    ///
    /// Owns `temporary`: whatever happens, it is removed only while it holds the download
    /// untouched. Anything else found there (a program wrote into the download while it was
    /// in place, or the old item could not be put back) is kept under a visible name.
    func replace(_ path: RemotePath, with temporary: String, replacing: LocalStat, kind: ItemKind) throws(ProviderError) {
        let target = absolute(path)
        let scan = { (at: String) -> LocalStat? in
            kind == .bundle ? LocalBundle.scan(at: at, path: path)?.stat : LocalScanner.entry(at: at, path: path)?.stat
        }
        let remove = { (at: String) in
            if kind == .bundle { try? FileManager.default.removeItem(atPath: at) } else { unlink(at) }
        }
        let download = scan(temporary)
        do throws(ProviderError) {
            try require(path, holds: replacing, kind: kind)
        } catch {
            remove(temporary)
            throw error
        }
        guard RenameAt2.rename(temporary, target, flags: RenameAt2.exchange) == 0 else {
            let code = errno
            guard code == ENOSYS || code == EINVAL else {
                remove(temporary)
                throw Self.error(code, "cannot put \(target) in place")
            }
            do throws(ProviderError) {
                guard kind == .bundle else { return try renameOrThrow(temporary, to: target) }
                // A directory cannot be renamed over a full one: the old bundle steps aside first.
                let aside = temporaryURL(beside: path).path
                try renameOrThrow(target, to: aside)
                do throws(ProviderError) { try renameOrThrow(temporary, to: target) } catch {
                    _ = rename(aside, target)
                    throw error
                }
                remove(aside)
                return
            } catch {
                remove(temporary)
                throw error
            }
        }
        // `temporary` now names the old item, `target` the download.
        let held = Self.stillHeld { kind == .bundle ? bundleHasWriter(atAbsolute: temporary, path: path) : Self.isOpenForWriting(atAbsolute: temporary) }
        if scan(temporary) == replacing, !held {
            remove(temporary)
            return
        }
        let why = held ? Self.heldError(target) : ProviderError(.versionMismatch, "\(target) changed while it was replaced; it is kept and looked at again")
        guard RenameAt2.rename(temporary, target, flags: RenameAt2.exchange) == 0 else {
            // Not expected (the same two names were just exchanged, unless a program
            // renamed the download away meanwhile): the user's version stays in sight.
            let kept = absolute(path.parent) + "/" + Self.keptName(for: path.name)
            guard rename(temporary, kept) == 0 else {
                throw Self.error(errno, "\(target) changed while it was replaced and could not be put back; the earlier version is at \(temporary)")
            }
            throw ProviderError(why.code, why.message + " (the version from before is kept as \(kept))")
        }
        // The download is back under the temporary name: removed unless a program wrote
        // into it while it was in place.
        if let download, scan(temporary) == download {
            remove(temporary)
        } else if scan(temporary) != nil {
            let kept = absolute(path.parent) + "/" + Self.keptName(for: path.name)
            if rename(temporary, kept) != 0 { remove(temporary) }
        }
        throw why
    }

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

    /// A visible name beside `name` for a version that could not be put back.
    static func keptName(for name: String) -> String {
        let dot = name.lastIndex(of: ".").flatMap { $0 == name.startIndex ? nil : $0 }
        let tag = " (kept \(UUID().uuidString.prefix(8)))"
        guard let dot else { return name + tag }
        return String(name[..<dot]) + tag + String(name[dot...])
    }

    /// Puts `source` at `target`, failing with `versionMismatch` when something is there;
    /// the caller removes `source` when this throws.
    private func linkNew(_ source: String, at target: String, path: RemotePath) throws(ProviderError) {
        if link(source, target) == 0 {
            unlink(source)
            return
        }
        let code = errno
        if code == EEXIST {
            guard listsExactly(path) else { throw foldedName(path) }
            throw ProviderError(.versionMismatch, "\(target) appeared since it was looked at; it is kept and looked at again")
        }
        guard code == EPERM || code == EOPNOTSUPP || code == EMLINK || code == EXDEV else {
            throw Self.error(code, "cannot put \(target) in place")
        }
        // A file system without hard links: check, then rename (a narrow race remains).
        guard entry(at: path) == nil else {
            throw ProviderError(.versionMismatch, "\(target) appeared since it was looked at; it is kept and looked at again")
        }
        try renameOrThrow(source, to: target)
    }

    func renameOrThrow(_ source: String, to target: String) throws(ProviderError) {
        guard rename(source, target) == 0 else { throw Self.error(errno, "cannot put \(target) in place") }
    }

    func setModificationDate(_ path: String, _ date: Date) {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        let nanoseconds = Int((date.timeIntervalSince1970 - seconds) * 1e9)
        let stamp = timespec(tv_sec: Int(seconds), tv_nsec: nanoseconds)
        var times = [stamp, stamp]
        _ = utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW)
    }

    /// fsyncs the folder holding `path`, so a rename into it survives a power loss.
    func syncFolder(of path: String) {
        let folder = (path as NSString).deletingLastPathComponent
        let fd = open(folder.isEmpty ? "/" : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    static func readFully(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
        var done = 0
        while done < count {
            let n = read(fd, buffer + done, count - done)
            if n < 0 { if errno == EINTR { continue }; return -1 }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// A system error as the port's error: a full disk parks the domain.
    static func error(_ code: Int32, _ what: String) -> ProviderError {
        let cause = String(cString: strerror(code))
        switch code {
        case ENOSPC, EDQUOT:
            return ProviderError(.localDiskFull, "the disk holding the sync folder is full; free some space (\(what))", underlying: cause)
        case ENOENT:
            return ProviderError(.parentMissing, "\(what): its folder is gone", underlying: cause)
        default:
            return ProviderError(.cannotSynchronize, what, underlying: cause)
        }
    }
}

extension LocalFolder {
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
}
