import Glibc
import Foundation
import SyncEngine
import SystemCalls

// Items set aside before a last look — by a delete (`removeFile`, `removeBundle`), and the
// old item a download replaces (`replace`) — carry their own name in the aside name: a crash
// before that look's outcome leaves the item there, and the next pass settles it
// (`SyncPass.settleAside`): removed when it is the synced version as recorded (what the look
// would have done) or a placeholder's missing bytes, else put back (`restoreAside`) rather
// than removed as a leftover temporary — it may hold an edit made just before the look.
extension LocalFolder {
    /// The prefix of the names items are renamed to while a step looks at them a last time.
    public static let asidePrefix = ".tidesync-aside-"

    /// An aside name for `name`: the prefix, a UUID, "-", and as much of `name` as fits in
    /// a file name (255 bytes), cut at a character.
    public static func asideName(for name: String) -> String {
        let head = asidePrefix + UUID().uuidString + "-"
        var kept = Substring(name)
        while head.utf8.count + kept.utf8.count > 255 { kept = kept.dropLast() }
        return head + kept
    }

    /// True for a name `asideName` gives.
    public static func isAside(_ name: String) -> Bool {
        originalName(ofAside: name) != nil
    }

    /// The name an aside name was made for (cut short when it did not fit), or nil.
    public static func originalName(ofAside name: String) -> String? {
        guard name.hasPrefix(asidePrefix) else { return nil }
        let rest = name.dropFirst(asidePrefix.count)
        guard rest.count > 37, UUID(uuidString: String(rest.prefix(36))) != nil, rest.dropFirst(36).first == "-" else { return nil }
        return String(rest.dropFirst(37))
    }

    /// The path of the aside at `absolutePath` in this folder, and of the item it was made
    /// for; nil for anything else.
    public func asidePaths(_ absolutePath: String) -> (aside: RemotePath, item: RemotePath)? {
        guard absolutePath.hasPrefix(root + "/"), !absolutePath.contains("/../") else { return nil }
        let components = absolutePath.dropFirst(root.count + 1).split(separator: "/").map(String.init)
        guard let last = components.last, let name = Self.originalName(ofAside: last),
              let aside = try? RemotePath(components), let item = try? aside.parent.appending(name) else { return nil }
        return (aside, item)
    }

    /// What the item at `path` is, as a scan sees it (a folder with a bundle's name is
    /// walked as one): for an aside, whose name is not the item's.
    public func asideStat(_ path: RemotePath, kind: ItemKind) -> LocalStat? {
        kind == .bundle ? LocalBundle.scan(at: absolute(path), path: path)?.stat : LocalScanner.entry(at: absolute(path), path: path)?.stat
    }

    /// Removes an aside (a file, or a bundle's tree).
    public func removeAside(_ path: RemotePath) {
        if unlink(absolute(path)) != 0, errno == EISDIR || errno == EPERM {
            try? FileManager.default.removeItem(atPath: absolute(path))
        }
    }

    /// Puts an item set aside (`absolutePath`) back under its name (`name`, or the one its
    /// aside name holds), or beside it as "name (kept …)" when the name is taken; returns
    /// where it went, nil when it could not be moved (it stays, and a pass tries again).
    public func restoreAside(_ absolutePath: String, as name: String? = nil) -> String? {
        let folder = (absolutePath as NSString).deletingLastPathComponent
        guard let name = name ?? Self.originalName(ofAside: (absolutePath as NSString).lastPathComponent),
              absolutePath.hasPrefix(root + "/") else { return nil }
        for candidate in [name, Self.keptName(for: name)] {
            let target = folder + "/" + candidate
            if RenameAt2.rename(absolutePath, target, flags: RenameAt2.noReplace) == 0 {
                syncFolder(of: target)
                return target
            }
            let failure = errno
            // No RENAME_NOREPLACE on this file system: check, then rename.
            if failure == EINVAL || failure == ENOSYS, LocalScanner.entry(at: target, path: .root) == nil, rename(absolutePath, target) == 0 {
                syncFolder(of: target)
                return target
            }
            guard [EEXIST, ENOTEMPTY, EINVAL, ENOSYS].contains(failure) else { return nil }
        }
        return nil
    }
}
