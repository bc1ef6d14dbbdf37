import Glibc
import SyncEngine
import SystemCalls

/// One item the scanner found in the sync folder.
public struct LocalScanEntry: Hashable, Sendable {
    public var path: RemotePath
    /// `file`, `folder`, `symlink`, or `bundle` (a folder whose name the domain's bundle
    /// rule names; its stat is `LocalBundle`'s).
    public var kind: ItemKind
    /// Inode, size and mtime in ns, as recorded after a sync.
    public var stat: LocalStat
    public var symlinkTarget: String?
}

/// What a scan found, and what it had to pass over.
public struct LocalScan: Sendable {
    public var entries: [RemotePath: LocalScanEntry] = [:]
    /// Names that cannot be synced (not UTF-8, too long) with the reason, for status.
    public var skipped: [(path: String, reason: String)] = []
    /// Our own download temporaries (`.tidesync-part-UUID`), by absolute path: between
    /// passes they are leftovers (a folder moved away with one inside while it was written);
    /// and items a crash left renamed aside by a delete (`LocalFolder.asideName`).
    public var temporaries: [String] = []
    /// Folders (and bundles) that are there but could not be read, with why ("permission
    /// denied"): nothing below them was seen, which never means they are empty.
    public var unreadable: [RemotePath: String] = [:]
}

/// What reading a folder, or looking at one path, gave.
public enum LocalLookup: Sendable, Equatable {
    case found(LocalScanEntry)
    /// Nothing is there (ENOENT, ENOTDIR), or nothing that is synced (a device, a fifo).
    case gone
    /// Something may be there, but the folder (the path itself, or the folder above it
    /// that could not be looked into) cannot be read now; `reason` says why.
    case unreadable(RemotePath, reason: String)
}

/// Walks the sync folder with `lstat`: symlinks are reported, never followed, so a
/// link cannot lead the scan out of the root. An item that vanishes between listing
/// and `lstat` is simply not reported; a root that is missing is an error, never an
/// empty folder (that would read as "the user deleted everything").
public struct LocalScanner: Sendable {
    public let root: String
    public let exclude: ExcludeList
    /// Which folders are bundles: reported as one item, not walked into.
    public let bundles: BundleRule

    public init(root: String, exclude: ExcludeList, bundles: BundleRule = .standard) {
        self.root = root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root
        self.exclude = exclude
        self.bundles = bundles
    }

    /// What is at `path` now: as `entry(at:path:)`, with a bundle reported as one item.
    public func item(at path: RemotePath) -> LocalScanEntry? {
        if case .found(let entry) = lookUp(path) { return entry }
        return nil
    }

    /// What is at `path` now, a bundle as one item; when it cannot be looked at, the folder
    /// that could not be read (the path's own folder, a folder above it, or the bundle).
    public func lookUp(_ path: RemotePath) -> LocalLookup {
        switch Self.lookUp(absolute(path), path: path) {
        case .found(let entry):
            var scan = LocalScan()
            let item = asBundle(entry, into: &scan) ?? entry
            if let (folder, reason) = scan.unreadable.first { return .unreadable(folder, reason: reason) }
            return .found(item)
        case .gone:
            return .gone
        case .unreadable:
            return unreadableFolder(above: path)
        }
    }

    /// The folder from which `path` cannot be looked at: walking down from the root, the
    /// first folder whose next component cannot be `lstat`ed (`.gone` if it vanished meanwhile).
    func unreadableFolder(above path: RemotePath) -> LocalLookup {
        var folder = RemotePath.root
        for component in path.components {
            guard let next = try? folder.appending(component) else { break }
            var st = stat()
            if lstat(absolute(next), &st) != 0 {
                let code = errno
                if Self.isGone(code) { return .gone }
                return .unreadable(next == path ? path.parent : folder, reason: Self.reason(forError: code))
            }
            folder = next
        }
        return .unreadable(path.parent, reason: "it changed while it was looked at")
    }

    /// `entry` as a bundle when it is a folder the bundle rule names (and not inside a
    /// bundle); members that cannot be synced go to `skipped`, a bundle that cannot be read
    /// whole to `unreadable`.
    func asBundle(_ entry: LocalScanEntry, into result: inout LocalScan) -> LocalScanEntry? {
        guard entry.kind == .folder, bundles.isBundle(name: entry.path.name), bundles.enclosingBundle(of: entry.path) == nil,
              let bundle = LocalBundle.scan(at: absolute(entry.path), path: entry.path) else { return nil }
        result.skipped += bundle.skipped
        if let reason = bundle.unreadable { result.unreadable[entry.path] = reason }
        return LocalScanEntry(path: entry.path, kind: .bundle, stat: bundle.stat)
    }

    /// Scans the whole tree below the root.
    public func scan() throws(ProviderError) -> LocalScan {
        var st = stat()
        guard lstat(root, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else {
            throw ProviderError(.cannotSynchronize,
                                "the sync folder \(root) is missing or not a folder; sync is stopped until it is back (was it unmounted or moved?)")
        }
        return try scan(below: .root)
    }

    /// Scans everything below the folder at `top` (not `top` itself); a folder that is not
    /// there gives nothing.
    public func scan(below top: RemotePath) throws(ProviderError) -> LocalScan {
        var result = LocalScan()
        var folders: [RemotePath] = [top]
        while let folder = folders.popLast() {
            for entry in try list(folder, into: &result) {
                result.entries[entry.path] = entry
                if entry.kind == .folder { folders.append(entry.path) }
            }
        }
        return result
    }

    /// True when the path or a folder above it is excluded.
    public func excludes(_ path: RemotePath) -> Bool {
        exclude.excludes(path)
    }

    func absolute(_ path: RemotePath) -> String {
        path.isRoot ? root : root + "/" + path.components.joined(separator: "/")
    }

    func list(_ folder: RemotePath, into result: inout LocalScan) throws(ProviderError) -> [LocalScanEntry] {
        let names: [[UInt8]]
        switch Self.read(folder: absolute(folder)) {
        case .names(let listed): names = listed
        case .gone: return []  // vanished mid-scan: its parent's entry goes too
        case .unreadable(let reason):
            result.unreadable[folder] = reason
            return []
        }
        var found: [LocalScanEntry] = []
        // The folder's paths once, not per name: only exclude patterns with a `/` (rare) and
        // names that are passed over need an item's relative path.
        let folderText = folder.description, folderAbsolute = absolute(folder)
        func relative(_ name: String) -> String { folder.isRoot ? name : folderText + "/" + name }
        // Each entry is looked up by its name in the folder, not by its whole path.
        let pathOnly: Int32 = 0o10_000_000  // O_PATH, which Swift's Glibc module does not export
        let directory = open(folderAbsolute, pathOnly | O_DIRECTORY | O_CLOEXEC)
        defer { if directory >= 0 { close(directory) } }
        for bytes in names {
            guard let name = String(validating: bytes, as: UTF8.self) else {
                result.skipped.append((folderAbsolute + "/" + String(decoding: bytes, as: UTF8.self), "the name is not valid UTF-8"))
                continue
            }
            if LocalFolder.isTemporary(name) || LocalFolder.isAside(name) {
                result.temporaries.append(folderAbsolute + "/" + name)
                continue
            }
            if exclude.excludes(name: name, relativePath: { relative(name) }) { continue }
            guard let path = try? folder.appending(name) else {
                result.skipped.append((relative(name), "the name cannot be synced"))
                continue
            }
            let lookup = directory >= 0 ? Self.lookUp(name, in: directory, path: path) : Self.lookUp(absolute(path), path: path)
            switch lookup {
            case .found(let entry): found.append(asBundle(entry, into: &result) ?? entry)
            case .gone: continue
            case .unreadable(_, let reason):
                // Listed but not looked into (no search permission, EIO): the whole folder
                // is unknown, or the items not seen would read as deleted.
                result.unreadable[folder] = reason
                return []
            }
        }
        return found
    }

    /// What reading a folder gave.
    public enum FolderRead: Sendable, Equatable {
        /// The names in it as bytes, without `.` and `..`.
        case names([[UInt8]])
        /// It is not there (ENOENT, ENOTDIR).
        case gone
        /// It could not be opened or read to the end; why, for people.
        case unreadable(String)
    }

    /// Reads the folder at `absolutePath`. Only ENOENT and ENOTDIR mean it is not there;
    /// any other failure, including a listing cut short (EIO), means it cannot be read —
    /// never that it is empty.
    public static func read(folder absolutePath: String) -> FolderRead {
        guard let dir = opendir(absolutePath) else {
            let code = errno
            return isGone(code) ? .gone : .unreadable(reason(forError: code))
        }
        defer { closedir(dir) }
        var names: [[UInt8]] = []
        while true {
            errno = 0  // NULL means the end or an error
            guard let raw = readdir(dir) else {
                let code = errno
                return code == 0 ? .names(names) : .unreadable(reason(forError: code))
            }
            let bytes = withUnsafeBytes(of: raw.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if bytes != [0x2E], bytes != [0x2E, 0x2E] { names.append(bytes) }
        }
    }

    /// The names in the folder at `absolutePath` as bytes, without `.` and `..`; nil when
    /// the folder is not there. Throws when it cannot be read (EACCES, EIO, …): an
    /// unreadable or partial listing must never read as an empty folder.
    static func names(in absolutePath: String) throws(ProviderError) -> [[UInt8]]? {
        switch read(folder: absolutePath) {
        case .names(let names): return names
        case .gone: return nil
        case .unreadable(let reason):
            throw ProviderError(.cannotSynchronize, "cannot list \(absolutePath) (\(reason)); this is retried", underlying: reason)
        }
    }

    /// True for the errors that mean "nothing is there": ENOENT, ENOTDIR. Every other error
    /// (EACCES, EPERM, EMFILE, ENFILE, EIO, ENOMEM, ELOOP, …) means "cannot see it".
    public static func isGone(_ code: Int32) -> Bool {
        code == ENOENT || code == ENOTDIR
    }

    /// Why a folder cannot be read, for status and logs.
    public static func reason(forError code: Int32) -> String {
        switch code {
        case EACCES, EPERM: "permission denied"
        case EMFILE, ENFILE: "too many open files"
        case EIO: "input/output error"
        case ENOMEM: "out of memory"
        case ELOOP: "too many levels of symbolic links"
        case ENAMETOOLONG: "the path is too long"
        default: String(cString: strerror(code)).lowercased()
        }
    }

    /// The entry for the item at `absolutePath`, or nil when nothing (or a device,
    /// fifo or socket, which are not synced) is there, or it cannot be looked at.
    public static func entry(at absolutePath: String, path: RemotePath) -> LocalScanEntry? {
        if case .found(let entry) = lookUp(absolutePath, path: path) { return entry }
        return nil
    }

    /// The entry for the item at `absolutePath`; `.unreadable` (with `path` as a placeholder
    /// for the folder) when `statx` or `readlink` fails with anything but ENOENT/ENOTDIR.
    static func lookUp(_ absolutePath: String, path: RemotePath) -> LocalLookup {
        lookUp(absolutePath, in: AT_FDCWD, path: path)
    }

    /// The same for `name` in the folder open as `directory` (`AT_FDCWD`: `name` is a path).
    static func lookUp(_ name: String, in directory: Int32, path: RemotePath) -> LocalLookup {
        guard let st = StatX.of(name, in: directory) else {
            let code = errno
            return isGone(code) ? .gone : .unreadable(path, reason: reason(forError: code))
        }
        let kind: ItemKind
        switch st.mode & S_IFMT {
        case S_IFREG: kind = .file
        case S_IFDIR: kind = .folder
        case S_IFLNK: kind = .symlink
        default: return .gone
        }
        var stat = LocalStat(st)
        if kind == .folder { stat.size = 0 }
        var target: String?
        if kind == .symlink {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let count = readlinkat(directory, name, &buffer, buffer.count - 1)
            guard count >= 0 else {
                let code = errno
                return isGone(code) ? .gone : .unreadable(path, reason: reason(forError: code))
            }
            target = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return .found(LocalScanEntry(path: path, kind: kind, stat: stat, symlinkTarget: target))
    }
}
