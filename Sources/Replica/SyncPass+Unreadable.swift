import Glibc
import Logging
import SyncEngine

/// Folders a pass cannot read (DESIGN.md, "Safety rails"): a local folder the scanner
/// cannot open or look into (EACCES, EIO, EMFILE, …) or a remote folder the store would not
/// list (403, 5xx) is unknown, never empty. Both sides of its subtree are taken as the state
/// DB recorded them, so nothing below it is planned — no deletion, no download, no upload —
/// and it is looked at again by the next pass (a watched pass scans it whole again).
extension SyncPass {
    /// The folders the last pass could not read; none when the state DB cannot say.
    func unreadableBefore() -> [UnreadableFolder] {
        (try? runner.provider.unreadableFolders()) ?? []
    }

    /// `scope`, with the local folders the last pass could not read scanned again whole: a
    /// folder made readable again syncs at the next pass, whatever the watcher saw.
    static func widened(_ scope: PassScope, by before: [UnreadableFolder]) -> PassScope {
        guard case .watched(var changes, let remote) = scope, !changes.fullScan else { return scope }
        let local = before.filter { $0.side == .local }
        guard !local.isEmpty else { return scope }
        for folder in local { changes.paths[folder.path] = true }
        return .watched(changes, remote: remote)
    }

    /// Why the folder at `path` cannot be read now, or nil when it can (checked without
    /// listing it: open, and read and search permission for this process's user).
    func unreadableReason(_ path: RemotePath) -> String? {
        let absolute = scanner.absolute(path)
        guard let dir = opendir(absolute) else {
            let code = errno
            return LocalScanner.isGone(code) ? nil : LocalScanner.reason(forError: code)
        }
        closedir(dir)
        guard faccessat(AT_FDCWD, absolute, R_OK | X_OK, AT_EACCESS) == 0 else {
            let code = errno
            return LocalScanner.isGone(code) ? nil : LocalScanner.reason(forError: code)
        }
        return nil
    }

    /// This pass's unreadable folders: the local ones it met, and the remote ones of its walk
    /// (or the last pass's, when it did not walk the remote). Each is logged once as a
    /// warning; the list is recorded for the next pass and for `tidesync status`.
    func settleUnreadable(local: [RemotePath: String], remote: [RemotePath: ProviderError]?,
                          before: [UnreadableFolder]) -> [UnreadableFolder] {
        var folders = local.map { UnreadableFolder(path: $0.key, side: .local, reason: $0.value) }
        if let remote {
            folders += remote.map { UnreadableFolder(path: $0.key, side: .remote, reason: $0.value.message) }
        } else {
            folders += before.filter { $0.side == .remote }
        }
        folders.sort { ($0.path, $0.side.rawValue) < ($1.path, $1.side.rawValue) }
        for folder in folders {
            let place = folder.side == .local
                ? (folder.path.isRoot ? scanner.root : scanner.absolute(folder.path))
                : "\(folder.path.isRoot ? "the remote's root" : folder.path.description) on the remote"
            logger.warning("not synced: \(place) cannot be read (\(folder.reason)); nothing below it is changed on either side until it can, and it is tried again at the next pass")
        }
        if Set(folders) != Set(before) {
            do throws(ProviderError) {
                try runner.provider.recordUnreadableFolders(folders)
            } catch {
                logger.warning("could not record the folders that cannot be read: \(error.message)")
            }
        }
        return folders
    }

    /// The subtrees both sides take as recorded: every unreadable folder, and for a local one
    /// that is a recorded folder moved while unreadable, its recorded place too (its items
    /// there must not read as deleted).
    static func unknownSubtrees(_ folders: [UnreadableFolder], local: [RemotePath: LocalObservation],
                                recorded: [RemotePath: ItemRecord]) -> UnknownSubtrees {
        var unknown = UnknownSubtrees(folders.map(\.path))
        let moved = folders.filter { $0.side == .local && recorded[$0.path] == nil }
        guard !moved.isEmpty else { return unknown }
        var byInode: [UInt64: RemotePath] = [:]
        for (path, record) in recorded where record.kind == .folder || record.kind == .bundle {
            if let inode = record.local?.inode { byInode[inode] = path }
        }
        for folder in moved {
            if let inode = local[folder.path]?.stat.inode, let old = byInode[inode] { unknown.insert(old) }
        }
        return unknown
    }

    /// Replaces both sides at and below every unknown folder by what the state DB recorded
    /// (nothing, where nothing was recorded): the planner then finds nothing to do there.
    static func takeAsRecorded(_ unknown: UnknownSubtrees, local: inout [RemotePath: LocalObservation],
                               remote: inout [RemotePath: RemoteEntry], recorded: [RemotePath: ItemRecord]) {
        guard !unknown.isEmpty else { return }
        local = local.filter { !unknown.contains($0.key) }
        remote = remote.filter { !unknown.contains($0.key) }
        let inside = recorded.filter { !$0.key.isRoot && unknown.contains($0.key) }
        local.merge(localAsRecorded(inside)) { _, recorded in recorded }
        for (path, record) in inside {
            remote[path] = RemoteEntry(recorded: record, at: path)
        }
    }
}
