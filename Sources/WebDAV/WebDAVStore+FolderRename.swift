import Foundation
import SyncEngine

// A folder renamed or moved to a name the server would cut (WsgiDAV, see
// `WebDAVStore+Destinations.swift`) cannot be one MOVE: its tree is copied there and the
// source deleted behind the copies, each file guarded by the version copied. Nothing is
// deleted before every copy stands, so a crash or a failure half-way leaves each file at
// its old place, its new one, or both; the next start finishes the rename from the
// journal (`finishFolderMove`).
extension WebDAVStore {
    public func moveFolder(_ source: RemotePath, to destination: RemotePath,
                           version: ETag?) async throws(ProviderError) -> RemoteEntry {
        _ = try await writeGuard()
        guard destinationIsCut(destination), try await entry(at: source).kind == .folder else {
            return try await move(source, to: destination, version: version)
        }
        if let version { try await requireVersion(source, version) }
        if try await exists(destination) { throw ProviderError(.filenameCollision, "\(destination) already exists on the server") }
        return try await moveFolderByCopy(source, to: destination, resuming: false)
    }

    /// Finishes a `moveFolder` by copies that a crash cut short: with both folders there,
    /// what is not yet copied is copied, a copy already made (the same bytes at the new
    /// name) is taken as made, and the source goes behind them as in `moveFolderByCopy`; a
    /// file whose new name holds other bytes stays at its old one (both are kept). With the
    /// source gone, the rename was over. Nil where a folder is moved in one MOVE, or when
    /// the destination is missing (the rename had not begun: the next pass makes it again).
    public func finishFolderMove(_ source: RemotePath, to destination: RemotePath) async throws(ProviderError) -> RemoteEntry? {
        _ = try await writeGuard()
        guard destinationIsCut(destination) else { return nil }
        let target: RemoteEntry
        do { target = try await entry(at: destination) } catch where error.code == .noSuchItem { return nil }
        guard target.kind == .folder else { return nil }
        guard try await exists(source) else { return target }
        guard try await entry(at: source).kind == .folder else { return nil }
        logger.notice("finishing the rename of \(source) to \(destination) by copies, which was cut short")
        return try await moveFolderByCopy(source, to: destination, resuming: true)
    }

    /// The rename of the folder `source` to `destination` (a name the server would cut) by
    /// copies: the tree as listed is copied (MKCOL per folder, `copyFile` per file, parents
    /// first), then the source is deleted file by file, each guarded by the version copied,
    /// and folder by folder, deepest first, each only while empty. A file changed (or
    /// added) on the server meanwhile stays in the source folder beside its copy: nothing
    /// is lost, and the next walk finds both. A copy that fails takes back what it made. A
    /// tree holding a symlink (its mark is a property a copy does not carry) is refused
    /// before anything is written; one holding a bundle never comes here
    /// (`SyncProvider.moveRemote`). `resuming`: see `finishFolderMove`.
    func moveFolderByCopy(_ source: RemotePath, to destination: RemotePath, resuming: Bool) async throws(ProviderError) -> RemoteEntry {
        let tree = try await descendants(of: source).filter { $0.path != source }
            .sorted { $0.path.components.count < $1.path.components.count }
        if let odd = tree.first(where: { $0.kind != .file && $0.kind != .folder }) {
            let what = odd.kind == .symlink ? "symlink" : "bundle"
            throw Self.cutRefusal("rename the folder \(source), which holds the \(what) \(odd.path), to \(destination)")
        }
        func target(_ path: RemotePath) throws(ProviderError) -> RemotePath {
            try RemotePath(destination.components + path.components.dropFirst(source.components.count))
        }
        var existing: [RemotePath: RemoteEntry] = [:]
        if resuming { for entry in try await descendants(of: destination) { existing[entry.path] = entry } }
        var made: [RemoteEntry] = []
        var copied: [RemoteEntry] = []
        do throws(ProviderError) {
            if !resuming { made.append(try await makeFolder(at: destination)) }
            for item in tree {
                let path = try target(item.path)
                if let there = existing[path] {
                    if item.kind == .file, there.kind == .file, try await sameBytes(item, there) { copied.append(item) }
                    continue
                }
                made.append(item.kind == .folder ? try await makeFolder(at: path) : try await copyFile(item, to: path))
                if item.kind == .file { copied.append(item) }
            }
        } catch {
            await takeBack(made)
            throw error
        }
        if let hook = treeCopied.withLock({ $0 }) { await hook(source) }
        for file in copied {
            guard let version = file.etag else { continue }
            try await deleteCopied(file.path, version: version, copy: target(file.path))
        }
        for folder in tree.filter({ $0.kind == .folder }).map(\.path).reversed() + [source] {
            guard try await children(of: folder).isEmpty else {
                logger.notice("\(folder) holds items changed or added on the server while it was renamed to \(destination) by a copy; it is kept")
                continue
            }
            do { try await delete(folder, version: nil) } catch where error.code == .noSuchItem {}
        }
        return try await entry(at: destination)
    }

    /// True when the files `a` and `b` hold the same bytes (both downloaded, at the listed
    /// versions, into scratch files).
    func sameBytes(_ a: RemoteEntry, _ b: RemoteEntry) async throws(ProviderError) -> Bool {
        guard a.size == b.size else { return false }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("tidesync-compare-\(UUID().uuidString)")
        let (first, second) = (scratch.appendingPathExtension("a"), scratch.appendingPathExtension("b"))
        defer {
            try? FileManager.default.removeItem(at: first)
            try? FileManager.default.removeItem(at: second)
        }
        _ = try await download(a.path, range: nil, version: a.etag, to: first, progress: nil)
        _ = try await download(b.path, range: nil, version: b.etag, to: second, progress: nil)
        return FileManager.default.contentsEqual(atPath: first.path, andPath: second.path)
    }
}
