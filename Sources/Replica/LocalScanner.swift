#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SyncEngine

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
    /// passes they are leftovers (a folder moved away with one inside while it was written).
    public var temporaries: [String] = []
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
        guard let entry = Self.entry(at: absolute(path), path: path) else { return nil }
        var skipped: [(path: String, reason: String)] = []
        return asBundle(entry, skipped: &skipped) ?? entry
    }

    /// `entry` as a bundle when it is a folder the bundle rule names (and not inside a
    /// bundle); members that cannot be synced go to `skipped`.
    func asBundle(_ entry: LocalScanEntry, skipped: inout [(path: String, reason: String)]) -> LocalScanEntry? {
        guard entry.kind == .folder, bundles.isBundle(name: entry.path.name), bundles.enclosingBundle(of: entry.path) == nil,
              let bundle = LocalBundle.scan(at: absolute(entry.path), path: entry.path) else { return nil }
        skipped += bundle.skipped
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
        // Vanished mid-scan: its parent's entry goes too.
        guard let names = try Self.names(in: absolute(folder)) else { return [] }
        var found: [LocalScanEntry] = []
        for bytes in names {
            guard let name = String(validating: bytes, as: UTF8.self) else {
                result.skipped.append((absolute(folder) + "/" + String(decoding: bytes, as: UTF8.self), "the name is not valid UTF-8"))
                continue
            }
            let relative = folder.isRoot ? name : folder.description + "/" + name
            if LocalFolder.isTemporary(name) {
                result.temporaries.append(absolute(folder) + "/" + name)
                continue
            }
            if exclude.excludes(name: name, relativePath: relative) { continue }
            guard let path = try? folder.appending(name) else {
                result.skipped.append((relative, "the name cannot be synced"))
                continue
            }
            if let entry = Self.entry(at: absolute(path), path: path) { found.append(asBundle(entry, skipped: &result.skipped) ?? entry) }
        }
        return found
    }

    /// The names in the folder at `absolutePath` as bytes, without `.` and `..`; nil when
    /// the folder is not there. Throws when the listing is cut short (EIO): a partial
    /// listing must never read as deletions.
    static func names(in absolutePath: String) throws(ProviderError) -> [[UInt8]]? {
        guard let dir = opendir(absolutePath) else { return nil }
        defer { closedir(dir) }
        var names: [[UInt8]] = []
        while true {
            errno = 0  // NULL means the end or an error
            guard let raw = readdir(dir) else {
                if errno != 0 {
                    throw ProviderError(.cannotSynchronize, "cannot list \(absolutePath); this is retried",
                                        underlying: String(cString: strerror(errno)))
                }
                return names
            }
            let bytes = withUnsafeBytes(of: raw.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if bytes != [0x2E], bytes != [0x2E, 0x2E] { names.append(bytes) }
        }
    }

    /// The entry for the item at `absolutePath`, or nil when nothing (or a device,
    /// fifo or socket, which are not synced) is there.
    public static func entry(at absolutePath: String, path: RemotePath) -> LocalScanEntry? {
        var st = stat()
        guard lstat(absolutePath, &st) == 0 else { return nil }
        let kind: ItemKind
        switch st.st_mode & S_IFMT {
        case S_IFREG: kind = .file
        case S_IFDIR: kind = .folder
        case S_IFLNK: kind = .symlink
        default: return nil
        }
        let stat = LocalStat(inode: UInt64(st.st_ino), size: kind == .folder ? 0 : Int64(st.st_size),
                             modificationTimeNanoseconds: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec))
        var target: String?
        if kind == .symlink {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let count = readlink(absolutePath, &buffer, buffer.count - 1)
            guard count >= 0 else { return nil }
            target = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return LocalScanEntry(path: path, kind: kind, stat: stat, symlinkTarget: target)
    }
}
