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
        /// Nil when the entry names none or it does not exist (`/nonexistent`).
        var home: String?
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
        guard let owner = account(folderOwner) else {
            return .failure(Failure(message: "the folder's owner, uid \(folderOwner), is not in the user database"))
        }
        guard let root = configured ?? owner.home.map({ URL(fileURLWithPath: $0).appendingPathComponent(".cache/thumbnails").path }) else {
            return .failure(Failure(message: "the folder's owner, uid \(folderOwner), has no home folder (none in the user "
                                        + "database, or it does not exist); set thumbnail_cache under [domain.placeholders]"))
        }
        return .success(ThumbnailCacheOwner(root: root, identity: IdentityThread.Identity(uid: owner.uid, gid: owner.gid)))
    }

    struct Failure: Error, Equatable {
        let message: String
    }

    /// The owner of `folder` (its uid), or why it cannot be looked at.
    static func owner(of folder: String) -> Result<uid_t, POSIXError> {
        var info = stat()
        guard stat(folder, &info) == 0 else { return .failure(POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)) }
        return .success(info.st_uid)
    }

    /// `uid`'s entry in the user database (`getpwuid_r`), or nil; its home only when that is
    /// an absolute path to a folder that exists (not a service account's `/nonexistent`).
    static func account(_ uid: uid_t) -> Account? {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16 << 10)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &found) == 0, found != nil else { return nil }
        var info = stat()
        let named = entry.pw_dir.map { String(cString: $0) } ?? ""
        let home: String? = named.hasPrefix("/") && stat(named, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR ? named : nil
        return Account(uid: entry.pw_uid, gid: entry.pw_gid, home: home)
    }

    /// Why the cache cannot be this owner's: a cache folder that belongs to another user
    /// (made by root, by an older tidesync) is refused rather than written around. When the
    /// daemon is root and writes as itself, every folder on the way must be root's and not
    /// open to others' writes (sticky /tmp aside): root writes only where no user can put a
    /// link. Run on the writer's thread.
    func foreignCache() -> String? {
        let expected = identity?.uid ?? geteuid()
        if identity == nil && expected == 0, let open = Self.userControlledFolder(on: root) { return open }
        var info = stat()
        guard lstat(root, &info) == 0 else { return nil }
        guard info.st_mode & S_IFMT == S_IFDIR else { return "\(root) is not a folder" }
        guard info.st_uid == expected else {
            return "\(root) belongs to uid \(info.st_uid), not to uid \(expected) whose thumbnails go there; "
                + "give it to that user (chown -R \(expected): \(root)) or remove it"
        }
        return nil
    }

    /// The first existing folder on the way to `path` (itself included) that is not root's
    /// or that others may write in without the sticky bit, as a sentence; nil when none is.
    static func userControlledFolder(on path: String) -> String? {
        var partial = ""
        for component in [""] + path.split(separator: "/").map(String.init) {
            partial += component.isEmpty ? "" : "/" + component
            var info = stat()
            guard lstat(partial.isEmpty ? "/" : partial, &info) == 0 else { return nil }
            let shown = partial.isEmpty ? "/" : partial
            if info.st_mode & S_IFMT == S_IFLNK { return "\(shown) is a symbolic link; a root daemon writes its own thumbnails only along real folders" }
            if info.st_uid != 0 {
                return "\(shown) belongs to uid \(info.st_uid); a root daemon writes its own thumbnails only into folders root owns "
                    + "(give the sync folder to that user, or set thumbnail_cache elsewhere)"
            }
            if info.st_mode & 0o022 != 0 && info.st_mode & S_ISVTX == 0 { return "\(shown) may be written by other users" }
        }
        return nil
    }
}
