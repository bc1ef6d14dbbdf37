// Durability contract for bundles: a downloaded bundle is built in a temporary directory
// beside its target (`.tidesync-part-UUID`, never reported by the scanner), its files
// fsynced, and put in place with one rename: `RENAME_NOREPLACE` for a new bundle, and
// `RENAME_EXCHANGE` with the old one (which must still have the stat the plan saw) for a
// replacement — so a program in the sync folder sees the old bundle or the new one, never a
// mix. The old tree, now under an aside name, is then removed. A crash leaves at most the
// temporary directory, which the journal names and the next pass removes, or the old tree
// under its aside name, which the next pass settles (`LocalFolder+Aside.swift`).
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

    /// Deletes the bundle at `path` only while it is what the plan saw and nobody writes into
    /// it: it is renamed aside first (one step for anyone looking, and a name no program
    /// knows, so nothing opens a member anew), walked again there, and removed only if it
    /// has no member held open for writing and still has `expected`. Otherwise it is put back
    /// and this throws `versionMismatch`: the next pass sees the change, and an edit beats a
    /// delete. A check followed by the rename (as files had it before `removeFile`) removed
    /// a rewrite of every member made between the two, which had landed whole in the bundle
    /// (two-client test, rclone seed 1207 beside CPU hogs: "the bundle version … was lost").
    func removeBundle(_ path: RemotePath, expected: LocalStat) throws(ProviderError) {
        let target = absolute(path)
        let aside = absolute(path.parent) + "/" + Self.asideName(for: path.name)
        guard rename(target, aside) == 0 else {
            if errno == ENOENT { return }
            throw Self.error(errno, "cannot delete \(target)")
        }
        syncFolder(of: target)
        // Writers first: nothing opens a member anew under the aside name, so one closed
        // before this check has finished writing, and the walk after it sees what it wrote.
        if !bundleHasWriter(atAbsolute: aside, path: path), LocalBundle.scan(at: aside, path: path)?.stat == expected {
            // Decided: under a name the next pass removes as a leftover, so a crash or a
            // failure half-way through the removal never brings half a bundle back.
            let doomed = temporaryURL(beside: path).path
            try? FileManager.default.removeItem(atPath: rename(aside, doomed) == 0 ? doomed : aside)
            return
        }
        let kept = try putBackBundle(aside, at: path)
        throw ProviderError(.versionMismatch, "\(target) is being written or changed since it was looked at; it is kept"
                            + (kept.map { " as \($0)" } ?? "") + " and looked at again")
    }

    /// Puts a bundle renamed aside by `removeBundle` back at `path`, or beside it under a
    /// visible name (returned) when something took the name meanwhile.
    private func putBackBundle(_ aside: String, at path: RemotePath) throws(ProviderError) -> String? {
        guard let restored = restoreAside(aside, as: path.name) else {
            throw Self.error(errno, "\(absolute(path)) changed while it was deleted and could not be put back; it is at \(aside)")
        }
        return restored == absolute(path) ? nil : restored
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
