// Whose thumbnail cache a domain's thumbnails go to, and as whom they are written. Files on
// demand need the daemon to run as root, but the cache a desktop reads is its user's
// (`~/.cache/thumbnails`): root's own cache would never be looked at, and root-owned files
// in the user's would be unreadable to their desktop (which then reads the image, i.e.
// downloads it) and would block their own thumbnailer. So the thumbnails of a folder go to
// the cache of the folder's owner and are written by a thread acting as that owner.
import Foundation
import Glibc
import SystemCalls
import Thumbnails

/// The cache a domain's thumbnails are written to and the identity they are written as.
struct ThumbnailCacheOwner: Equatable {
    /// The cache folder (holding `normal`, `large`...).
    var root: String
    /// The user to write as; nil when that is the daemon itself.
    var identity: IdentityThread.Identity?

    /// A user database entry.
    struct Account: Equatable {
        var uid: uid_t
        var gid: gid_t
        var home: String
    }

    /// Where the thumbnails of a folder owned by `folderOwner` go, for a daemon running as
    /// `daemonUID`: `configured` when given, else the owner's `~/.cache/thumbnails` (the
    /// daemon's own `$XDG_CACHE_HOME` is used only when the daemon is the owner: another
    /// user's environment is not known here). The reason as a sentence when none can be
    /// written.
    static func resolve(folderOwner: uid_t, daemonUID: uid_t, configured: String?, environment: [String: String],
                        account: (uid_t) -> Account?) -> Result<ThumbnailCacheOwner, Failure> {
        if folderOwner == daemonUID {
            let root = configured ?? ThumbnailCache.standard(environment: environment).root.path
            return .success(ThumbnailCacheOwner(root: root, identity: nil))
        }
        guard daemonUID == 0 else {
            return .failure(Failure(message: "the folder belongs to uid \(folderOwner) and the daemon runs as uid \(daemonUID), "
                                        + "which cannot write that user's thumbnail cache"))
        }
        guard let owner = account(folderOwner), owner.home.hasPrefix("/") else {
            return .failure(Failure(message: "the folder's owner, uid \(folderOwner), has no home folder in the user database; "
                                        + "set thumbnail_cache under [domain.placeholders]"))
        }
        let root = configured ?? URL(fileURLWithPath: owner.home).appendingPathComponent(".cache/thumbnails").path
        return .success(ThumbnailCacheOwner(root: root, identity: IdentityThread.Identity(uid: owner.uid, gid: owner.gid)))
    }

    struct Failure: Error, Equatable {
        let message: String
    }

    /// The owner of `folder` (its uid), or nil when it cannot be looked at.
    static func owner(of folder: String) -> uid_t? {
        var info = stat()
        return stat(folder, &info) == 0 ? info.st_uid : nil
    }

    /// `uid`'s entry in the user database (`getpwuid_r`), or nil.
    static func account(_ uid: uid_t) -> Account? {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16 << 10)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &found) == 0, found != nil, let home = entry.pw_dir else { return nil }
        return Account(uid: entry.pw_uid, gid: entry.pw_gid, home: String(cString: home))
    }

    /// Why a cache that exists cannot be this owner's: a cache folder that belongs to another
    /// user (made by root, by an older tidesync) is refused rather than written around.
    /// Run on the writer's thread.
    func foreignCache() -> String? {
        var info = stat()
        guard lstat(root, &info) == 0 else { return nil }
        let expected = identity?.uid ?? geteuid()
        guard info.st_mode & S_IFMT == S_IFDIR else { return "\(root) is not a folder" }
        guard info.st_uid == expected else {
            return "\(root) belongs to uid \(info.st_uid), not to uid \(expected) whose thumbnails go there; "
                + "give it to that user (chown -R \(expected): \(root)) or remove it"
        }
        return nil
    }
}
