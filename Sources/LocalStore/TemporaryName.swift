import Glibc
import Foundation

/// Names of the store's temporary files: `.tidesync-tmp-RANDOM`. A writer holds an
/// exclusive `flock` on its temporary file from creation to rename, so a later walk
/// can tell a crashed writer's leftovers (lock free) from a live upload (locked) —
/// across processes, containers and hosts sharing the store, where pids mean nothing.
enum TemporaryName {
    static let prefix = ".tidesync-tmp-"
    /// Leftovers that cannot be locked (folders being deleted, symlinks) are removed
    /// once they are this old.
    static let unlockableAge: TimeInterval = 600

    /// A fresh temporary name.
    static func make() -> String {
        "\(prefix)\(UInt64.random(in: 0...UInt64.max))-\(UInt32.random(in: 0...UInt32.max))"
    }

    /// Where a deleted folder goes to be removed: `.tidesync-tmp-trash-RANDOM`. Nothing in
    /// it is wanted any more from the moment of the rename, so a walk that finds one (its
    /// deleter was killed) removes it at once, whatever its age.
    static func makeTrash() -> String {
        "\(trashPrefix)\(UInt64.random(in: 0...UInt64.max))-\(UInt32.random(in: 0...UInt32.max))"
    }

    static let trashPrefix = prefix + "trash-"

    /// The folder a tree is copied into while the copier holds the lock file `lock`
    /// (a temporary file, `flock`ed as any): `lock.d`. Stale once the lock file is gone or
    /// can be locked — the same test as a file's, so a killed copy's tree is removed by the
    /// next walk and a live one is never touched.
    static func companion(of lock: String) -> String { lock + companionSuffix }
    static let companionSuffix = ".d"

    /// True when the lock file at `path` is gone or no process holds it.
    static func isFree(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return errno == ENOENT }
        defer { close(fd) }
        return flock(fd, LOCK_EX | LOCK_NB) == 0
    }

    /// Removes `directory/name` when it is a temporary whose writer is gone.
    static func removeIfStale(name: String, in directory: String) {
        guard name.hasPrefix(prefix) else { return }
        let path = directory + "/" + name
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        if name.hasPrefix(trashPrefix) {
            try? FileManager.default.removeItem(atPath: path)
        } else if st.st_mode & S_IFMT == S_IFREG {
            if isFree(path) { unlink(path) }
        } else if st.st_mode & S_IFMT == S_IFDIR, name.hasSuffix(companionSuffix) {
            if isFree(String(path.dropLast(companionSuffix.count))) { try? FileManager.default.removeItem(atPath: path) }
        } else if Date().timeIntervalSince1970 - Double(st.st_mtim.tv_sec) > unlockableAge {
            try? FileManager.default.removeItem(atPath: path)
        }
    }
}
