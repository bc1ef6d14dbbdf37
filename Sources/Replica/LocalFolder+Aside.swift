import Glibc
import Foundation
import SystemCalls

// Items a delete renames aside before it looks at them a last time (`removeFile`,
// `removeBundle`) carry their own name in the aside name: a crash between that rename and
// the delete or the put-back leaves the item there, and the next pass puts it back
// (`restoreAside`) instead of removing it as a leftover temporary — it may hold an edit
// made just before the delete's last look.
extension LocalFolder {
    /// The prefix of the names items are renamed to while a delete looks at them.
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

    /// Puts an item set aside (`absolutePath`) back under its name (`name`, or the one its
    /// aside name holds), or beside it as "name (kept …)" when the name is taken; returns
    /// where it went, nil when it could not be moved (it stays, and a pass tries again).
    func restoreAside(_ absolutePath: String, as name: String? = nil) -> String? {
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
