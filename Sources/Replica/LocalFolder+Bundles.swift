// Durability contract for bundles: a downloaded bundle is built in a temporary directory
// beside its target (`.tidesync-part-UUID`, never reported by the scanner), its files
// fsynced, and put in place with one rename: `RENAME_NOREPLACE` for a new bundle, and
// `RENAME_EXCHANGE` with the old one (which must still have the stat the plan saw) for a
// replacement — so a program in the sync folder sees the old bundle or the new one, never a
// mix. The old tree, now under the temporary name, is then removed. A crash leaves at most
// the temporary directory, which the journal names and the next pass removes.
import Glibc
import Foundation
import SyncEngine
import SystemCalls

extension LocalFolder {
    /// Puts the bundle built in the directory `temporary` at `path`; `replacing` is the stat
    /// the bundle there must still have (nil: nothing may be there). Returns the installed
    /// bundle as walked after the rename.
    @discardableResult
    public func installBundle(_ temporary: URL, at path: RemotePath, replacing: LocalStat?) throws(ProviderError) -> LocalBundle {
        let target = absolute(path)
        if let replacing {
            try replace(path, with: temporary.path, replacing: replacing, kind: .bundle)
        } else { do throws(ProviderError) {
            if RenameAt2.rename(temporary.path, target, flags: RenameAt2.noReplace) != 0 {
                if errno == EEXIST {
                    throw ProviderError(.versionMismatch, "\(target) appeared since it was looked at; it is kept and looked at again")
                }
                guard errno == ENOSYS || errno == EINVAL else { throw Self.error(errno, "cannot put \(target) in place") }
                guard LocalScanner.entry(at: target, path: path) == nil else {
                    throw ProviderError(.versionMismatch, "\(target) appeared since it was looked at; it is kept and looked at again")
                }
                try renameOrThrow(temporary.path, to: target)
            }
        } catch {
            try? FileManager.default.removeItem(atPath: temporary.path)
            throw error
        } }
        syncFolder(of: target)
        guard let installed = bundle(at: path) else {
            throw ProviderError(.versionMismatch, "\(target) was replaced right after it was downloaded; it will be looked at again")
        }
        return installed
    }

    /// Removes the tree at `path`: renamed away first (one step for anyone looking), then
    /// deleted.
    func removeTree(_ path: RemotePath) throws(ProviderError) {
        let aside = temporaryURL(beside: path).path
        guard rename(absolute(path), aside) == 0 else {
            if errno == ENOENT { return }
            throw Self.error(errno, "cannot delete \(absolute(path))")
        }
        syncFolder(of: absolute(path))
        try? FileManager.default.removeItem(atPath: aside)
    }

    /// True when the bundle at `path` still has `expected` and holds exactly what the
    /// directory `other` holds: the same members, kinds, symlink targets and file bytes.
    public func bundleEqual(_ path: RemotePath, expected: LocalStat, other: URL) throws(ProviderError) -> Bool {
        try require(path, holds: expected, kind: .bundle)
        guard let mine = bundle(at: path),
              let theirs = LocalBundle.scan(at: other.path, path: path) else { return false }
        guard mine.members.count == theirs.members.count else { return false }
        for (a, b) in zip(mine.members, theirs.members) {
            guard a.relativePath.utf8.elementsEqual(b.relativePath.utf8), a.kind == b.kind,
                  a.symlinkTarget == b.symlinkTarget, a.kind != .file || a.stat.size == b.stat.size else { return false }
            if a.kind == .file, try Self.contentHash(ofFileAt: absolute(path) + "/" + a.relativePath)
                != Self.contentHash(ofFileAt: other.path + "/" + b.relativePath) {
                return false
            }
        }
        try require(path, holds: expected, kind: .bundle)
        return true
    }
}
