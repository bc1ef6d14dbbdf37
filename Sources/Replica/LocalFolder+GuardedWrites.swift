// Durability contract: a downloaded file is written to a temporary file beside its target
// (`.tidesync-part-UUID`, a name the scanner and watcher never report), made durable (fsynced
// by the engine, or with a round of others by `PlacementRounds`), given the remote mtime, and
// renamed into place only while the target still has the stat the plan saw (or, for a new
// file, while nothing is there: renameat2 RENAME_NOREPLACE, or link(2) where it is missing,
// refuses to replace); the folder is fsynced after the rename (or the round's file system
// synced). A crash leaves at most the temporary file, which the journal names and the next
// pass removes — or, a download's part (`partURL`), resumes —
// or an item set aside for a last look (`LocalFolder+Aside.swift`), which the next pass
// settles: removed when it is the synced version, else put back.
import Glibc
import Foundation
import SyncEngine
import SystemCalls

extension LocalFolder {
    /// Moves the downloaded `temporary` to `path`, giving it `modificationDate`; `replacing`
    /// is the stat the item at `path` must still have (nil: nothing may be there). Returns
    /// the stat of the installed file. The folder is fsynced after the rename, unless
    /// `syncingFolder` is false (the caller syncs the file system after a round of them,
    /// `PlacementRounds`).
    public func install(_ temporary: URL, at path: RemotePath, replacing: LocalStat?,
                        modificationDate: Date?, syncingFolder: Bool = true) throws(ProviderError) -> LocalStat {
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
        if syncingFolder { syncFolder(of: target) }
        guard let now = entry(at: path), now.stat.inode == installed.stat.inode else {
            throw ProviderError(.versionMismatch, "\(target) was replaced right after it was downloaded; it will be looked at again")
        }
        // The stat of the download as it was put in place, not as it is now: a program
        // that wrote into the file since (it is in sight from the rename on) made a change
        // the record must not take for the download, or it is never uploaded (two-client
        // test, seed 1207, beside CPU hogs: an edit right after a download was lost).
        return installed.stat
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
            try removeBundle(path, expected: expected ?? now.stat)
            return true
        }
        if now.kind != .folder {
            try removeFile(path, expected: now.stat)
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
                do { try removeBundle(child.path, expected: child.stat) } catch { emptied = false }
            } else {
                do { try removeFile(child.path, expected: child.stat) } catch { emptied = false }
            }
        }
        return emptied
    }

    /// Deletes the file at `path` only while nobody is writing it: it is first renamed
    /// aside (a temporary name no program knows, so nothing can open it anew), then deleted
    /// if it still has `expected` and no process holds it open for writing. Otherwise it is
    /// put back and this throws `versionMismatch`. A plain check-then-unlink lost an edit
    /// that opened the file between the check and the unlink: its bytes went into a file
    /// with no name (the two-client test, seed 1207).
    func removeFile(_ path: RemotePath, expected: LocalStat) throws(ProviderError) {
        let target = absolute(path)
        let asideName = Self.asideName(for: path.name)
        let aside = absolute(path.parent) + "/" + asideName
        guard rename(target, aside) == 0 else {
            if errno == ENOENT { return }
            throw Self.error(errno, "cannot delete \(target)")
        }
        // Writers first: nothing opens it anew under the aside name, so one closed before
        // this check has finished writing, and the stat after it sees what it wrote.
        if !Self.isOpenForWriting(atAbsolute: aside),
           (try? path.parent.appending(asideName)).flatMap({ entry(at: $0) })?.stat == expected {
            guard unlink(aside) == 0 || errno == ENOENT else { throw Self.error(errno, "cannot delete \(target)") }
            syncFolder(of: target)
            return
        }
        _ = restoreAside(aside, as: path.name)
        throw ProviderError(.versionMismatch, "\(target) is being written or changed since it was looked at; it is kept and looked at again")
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

    /// Throws `versionMismatch` unless the item at `path` is of `kind` and has `expected`
    /// (files and bundles: inode, size and mtime — a bundle's digest; folders and symlinks: the inode).
    func require(_ path: RemotePath, holds expected: LocalStat, kind: ItemKind) throws(ProviderError) {
        guard let now = entry(at: path), now.kind == kind else {
            throw ProviderError(.versionMismatch, "\(absolute(path)) changed since it was looked at; it is kept and looked at again")
        }
        let same = kind == .file || kind == .bundle ? now.stat == expected : now.stat.sameInode(as: expected)
        guard same else {
            throw ProviderError(.versionMismatch, "\(absolute(path)) changed since it was looked at; it is kept and looked at again")
        }
    }

    /// Puts `source` at `target`, failing with `versionMismatch` when something is there;
    /// the caller removes `source` when this throws.
    private func linkNew(_ source: String, at target: String, path: RemotePath) throws(ProviderError) {
        // A rename that refuses to replace: one change to the folder, where link and unlink
        // make two (a tenth of a 10 000-file download's system time). A file system without
        // RENAME_NOREPLACE (EINVAL) or a kernel without renameat2 (ENOSYS) links, as before.
        if RenameAt2.rename(source, target, flags: RenameAt2.noReplace) == 0 { return }
        var code = errno
        // Any other refusal (no space, no permission, a read-only file system) is the
        // rename's own, and reported as such.
        guard [EEXIST, EINVAL, ENOSYS, EOPNOTSUPP].contains(code) else { throw Self.error(code, "cannot put \(target) in place") }
        if code != EEXIST {
            if link(source, target) == 0 {
                unlink(source)
                return
            }
            code = errno
        }
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

    /// fsyncs the folder holding `path`, so a rename into it survives a power loss. Callers
    /// at the same time share one fsync that began after they called (`FolderSyncs`).
    func syncFolder(of path: String) {
        let folder = (path as NSString).deletingLastPathComponent
        Self.folderSyncs.sync(folder) {
            let fd = open(folder.isEmpty ? "/" : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard fd >= 0 else { return }
            fsync(fd)
            close(fd)
        }
    }

    static let folderSyncs = FolderSyncs()
}
