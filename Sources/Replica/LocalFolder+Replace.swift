// Replacing an item in place: the guarded exchange of a download with the item the plan
// saw. Durability as in `LocalFolder+GuardedWrites.swift`: the callers (`install`,
// `installBundle`) fsync the folder after the exchange.
import Glibc
import Foundation
import SyncEngine
import SystemCalls

extension LocalFolder {
    /// Puts the downloaded `temporary` (beside `path`) in the place of the file or bundle at
    /// `path`, which must still have `replacing`. One `RENAME_EXCHANGE` (from an aside name,
    /// `LocalFolder+Aside.swift`), after which the old item — now under that name, where no
    /// program looks for it — is checked once
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
        // The exchange puts the old item under the download's name: under an aside name
        // (which holds the item's name), a crash before the check below leaves it for the
        // next pass to put back beside the download, instead of for the journal's clean-up,
        // which removes the download's temporary (the old item may hold an edit made just
        // before the check). A crash between this rename and the exchange leaves the
        // download there, put beside the item as a copy: one more file, nothing lost.
        let downloaded = temporary
        let aside = absolute(path.parent) + "/" + Self.asideName(for: path.name)
        let temporary = rename(downloaded, aside) == 0 ? aside : downloaded
        guard RenameAt2.rename(temporary, target, flags: RenameAt2.exchange) == 0 else {
            let code = errno
            guard code == ENOSYS || code == EINVAL else {
                remove(temporary)
                throw Self.error(code, "cannot put \(target) in place")
            }
            do throws(ProviderError) {
                guard kind == .bundle else { return try renameOrThrow(temporary, to: target) }
                // A directory cannot be renamed over a full one: the old bundle steps aside first.
                let old = temporaryURL(beside: path).path
                try renameOrThrow(target, to: old)
                do throws(ProviderError) { try renameOrThrow(temporary, to: target) } catch {
                    _ = rename(old, target)
                    throw error
                }
                remove(old)
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

    /// A visible name beside `name` for a version that could not be put back.
    static func keptName(for name: String) -> String {
        let dot = name.lastIndex(of: ".").flatMap { $0 == name.startIndex ? nil : $0 }
        let tag = " (kept \(UUID().uuidString.prefix(8)))"
        guard let dot else { return name + tag }
        return String(name[..<dot]) + tag + String(name[dot...])
    }
}
