import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Walking a folder tree on disk, and comparing trees read from it. Each suite keeps its
/// own idea of what an entry is worth comparing (contents, a checksum, a kind); the walk
/// and the comparison are shared.
public enum FileTree {
    /// One entry found below the walked root, as `lstat` saw it (a symlink is not followed).
    public struct Entry {
        /// Its path below the root, without a leading `/`.
        public let relative: String
        /// Its full path.
        public let absolute: String
        /// Its file type bits (`st_mode & S_IFMT`).
        public let type: mode_t
        /// Its size in bytes.
        public let size: Int64

        /// True for a folder.
        public var isFolder: Bool { type == S_IFDIR }
        /// True for a symbolic link.
        public var isSymlink: Bool { type == S_IFLNK }
        /// Its last path component.
        public var name: String { (relative as NSString).lastPathComponent }
    }

    /// Calls `visit` for every entry below `root`, in no set order. A name `leaveOut` returns
    /// true for is neither visited nor walked into; a folder is walked into when `descend`
    /// returns true for it. `listed` is told each folder's relative path ("" for the root)
    /// and every name read in it, before `leaveOut` applies. A folder that cannot be read, or
    /// an entry gone before it was looked at, is passed over.
    public static func walk(_ root: String, leaveOut: (String) -> Bool = { _ in false },
                            descend: (Entry) -> Bool = { _ in true },
                            listed: (String, [String]) -> Void = { _, _ in },
                            _ visit: (Entry) -> Void) {
        var pending = [""]
        while let folder = pending.popLast() {
            let absolute = folder.isEmpty ? root : root + "/" + folder
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: absolute) else { continue }
            listed(folder, names)
            for name in names where !leaveOut(name) {
                let relative = folder.isEmpty ? name : folder + "/" + name
                var st = stat()
                guard lstat(absolute + "/" + name, &st) == 0 else { continue }
                let entry = Entry(relative: relative, absolute: absolute + "/" + name, type: st.st_mode & S_IFMT, size: Int64(st.st_size))
                visit(entry)
                if entry.isFolder, descend(entry) { pending.append(relative) }
            }
        }
    }

    /// The paths whose value differs between two trees, or that only one holds, sorted.
    public static func differingPaths<Value: Equatable>(_ one: [String: Value], _ other: [String: Value]) -> [String] {
        Set(one.keys).union(other.keys).filter { one[$0] != other[$0] }.sorted()
    }
}
