// Durability contract: a write lands in a temporary file beside its target
// (`.tidesync-tmp-HOST-PID-RANDOM`), is fsynced, and is renamed into place under the
// store lock after the version check; the directory is fsynced after the rename. A
// reader never sees a partial file; a crash leaves at most a temporary file, which
// listings hide and `descendants` removes once its writer is gone.
import Glibc
import Foundation
import SyncEngine

/// A `RemoteStore` over a plain directory (`file:///srv/store`): the embedded default,
/// needing no server. Versions are (size, mtime in ns, inode); file ids are inodes.
public struct LocalDirectoryStore: RemoteStore {
    /// The store's root folder, absolute.
    public let root: String
    let lock: StoreLock

    /// A store over the directory at `root` (which must exist when operations run;
    /// a missing root is reported as `serverUnreachable`, never as an empty store).
    public init(root: String) {
        let trimmed = root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root
        self.root = trimmed
        self.lock = StoreLock(path: trimmed + "/" + Self.lockName)
    }

    static let lockName = ".tidesync-store.lock"

    /// True for names the store uses for itself (its lock, its temporary files); never
    /// listed. The engine's own scratch names (a bundle being built or set aside) are
    /// listed like on any server: a walk that finds one knows a bundle write is under way.
    public static func isInternal(name: String) -> Bool { name == lockName || name.hasPrefix(TemporaryName.prefix) }

    func fullPath(_ path: RemotePath) -> String {
        path.isRoot ? root : root + "/" + path.components.joined(separator: "/")
    }

    /// Fails with `serverUnreachable` unless the root is an existing directory.
    func checkRoot() throws(ProviderError) {
        // stat, not lstat: the root may be a symlink to the real folder.
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ProviderError(.serverUnreachable,
                                "the store folder \(root) does not exist or is not a folder; create it or mount its disk")
        }
    }

    func entry(for path: RemotePath, status: FileStatus) throws(ProviderError) -> RemoteEntry {
        var target: String?
        if status.kind == .symlink { target = try readLink(fullPath(path)) }
        return RemoteEntry(path: path, kind: status.kind, size: status.size, etag: status.etag,
                           fileID: String(status.inode),
                           modificationDate: Date(timeIntervalSince1970: Double(status.modificationSeconds)
                                                  + Double(status.modificationNanoseconds) / 1e9),
                           symlinkTarget: target)
    }

    public func entry(at path: RemotePath) async throws(ProviderError) -> RemoteEntry {
        try checkRoot()
        guard let status = try FileStatus.of(fullPath(path)) else {
            throw ProviderError(.noSuchItem, "\(path) does not exist in the store")
        }
        return try entry(for: path, status: status)
    }

    public func children(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry] {
        try checkRoot()
        return try listFolder(path, removingStaleTemporaries: false)
    }

    public func descendants(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry] {
        try await listing(below: path).complete(below: path)
    }

    public func listing(below path: RemotePath) async throws(ProviderError) -> RemoteListing {
        try checkRoot()
        return try walk(path)
    }

    public func walk(below path: RemotePath, visit: ([RemoteEntry]) -> Void) async throws(ProviderError) -> RemoteListing {
        try checkRoot()
        return try walk(path, visit: visit)
    }

    /// Every entry below the folder at `path`, as `walk(_:visit:)` lists them.
    func walk(_ path: RemotePath) throws(ProviderError) -> RemoteListing {
        var collected = RemoteListing(entries: [])
        var result = try walk(path) { collected.collect($0) }
        result.entries = collected.entries
        return result
    }

    /// Every entry below the folder at `path`, listed folder by folder, each folder's handed
    /// to `visit`. A folder below `path` that cannot be opened or read (EACCES, EIO, EMFILE, …)
    /// is unlisted, not empty.
    func walk(_ path: RemotePath, visit: ([RemoteEntry]) -> Void) throws(ProviderError) -> RemoteListing {
        var result = RemoteListing(entries: [])
        var folders = [path]
        while let folder = folders.popLast() {
            let entries: [RemoteEntry]
            do {
                entries = try listFolder(folder, removingStaleTemporaries: true)
            } catch where error.code == .noSuchItem && folder != path {
                // Its parent still names it: dropping its children would read as deletions.
                throw ProviderError(.pageExpired, "\(folder) changed in the store while it was listed; listing again")
            } catch where folder != path {
                result.unlisted[folder] = error
                continue
            }
            visit(entries)
            // The engine's scratch folders (a bundle being written) are listed, never
            // entered: nothing in them is an item, and they come and go mid-walk.
            folders.append(contentsOf: entries.filter { $0.kind == .folder && !$0.path.name.hasPrefix(BundleManifest.scratchPrefix) }.map(\.path))
        }
        return result
    }

    func listFolder(_ path: RemotePath, removingStaleTemporaries: Bool) throws(ProviderError) -> [RemoteEntry] {
        let directory = fullPath(path)
        guard let dir = opendir(directory) else {
            if errno == ENOTDIR || errno == ENOENT { throw ProviderError(.noSuchItem, "\(path) is not a folder in the store") }
            throw SystemError.providerError(errno, "cannot list \(directory)")
        }
        defer { closedir(dir) }
        var entries: [RemoteEntry] = []
        while true {
            // readdir returns NULL both at the end and on an error; only errno tells
            // them apart, and a listing cut short by EIO must not read as deletions.
            errno = 0
            guard let raw = readdir(dir) else {
                if errno != 0 { throw SystemError.providerError(errno, "cannot list \(directory)") }
                break
            }
            // A name that is not UTF-8 cannot be a RemotePath; it was never synced, so
            // leaving it out deletes nothing.
            guard let name = withUnsafeBytes(of: raw.pointee.d_name, { buffer in
                String(validating: buffer.prefix { $0 != 0 }, as: UTF8.self)
            }) else { continue }
            if name == "." || name == ".." { continue }
            if Self.isInternal(name: name) {
                if removingStaleTemporaries { TemporaryName.removeIfStale(name: name, in: directory) }
                continue
            }
            guard let child = try? path.appending(name) else { continue }
            // A file that vanishes between readdir and lstat is simply not listed.
            guard let status = try FileStatus.of(name, in: dirfd(dir), path: directory + "/" + name) else { continue }
            entries.append(try entry(for: child, status: status))
        }
        return entries
    }

    func readLink(_ path: String) throws(ProviderError) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count >= 0 else { throw SystemError.providerError(errno, "cannot read the symlink \(path)") }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Checks `condition` against what is at `target` now; call with the lock held.
    func check(_ condition: WriteCondition, at target: String, path: RemotePath) throws(ProviderError) {
        let current = try FileStatus.of(target)
        switch condition {
        case .mustNotExist:
            if current != nil { throw ProviderError(.filenameCollision, "\(path) already exists in the store") }
        case .mustMatch(let version):
            guard let current else { throw ProviderError(.noSuchItem, "\(path) no longer exists in the store") }
            guard current.etag.sameValue(as: version) else {
                throw ProviderError(.versionMismatch, "\(path) changed in the store since version \(version)")
            }
        }
    }

    /// Fails with `parentMissing` unless the parent of `path` is a folder.
    func checkParent(of path: RemotePath) throws(ProviderError) {
        let parent = try FileStatus.of(fullPath(path.parent))
        guard parent?.kind == .folder else {
            throw ProviderError(.parentMissing, "the folder \(path.parent) does not exist in the store")
        }
    }
}
