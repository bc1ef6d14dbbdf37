import Foundation
import SyncEngine

// A folder renamed or moved to a name the server would cut (WsgiDAV, see
// `WebDAVStore+Destinations.swift`) cannot be one MOVE: its tree is copied there and the
// source deleted behind the copies, each file guarded by the version copied. Nothing is
// deleted before every copy stands, so a crash or a failure half-way leaves each file at
// its old place, its new one, or both (the next walk sees the folder renamed locally and
// what the server holds: see "Crash half-way" in `moveFolderByCopy`).
extension WebDAVStore {
    public func moveFolder(_ source: RemotePath, to destination: RemotePath,
                           version: ETag?) async throws(ProviderError) -> RemoteEntry {
        _ = try await writeGuard()
        guard destinationIsCut(destination), try await entry(at: source).kind == .folder else {
            return try await move(source, to: destination, version: version)
        }
        if let version { try await requireVersion(source, version) }
        return try await moveFolderByCopy(source, to: destination)
    }

    /// `move` of the folder `source` to `destination`, a name the server would cut: the tree
    /// as listed is copied (MKCOL per folder, `copyFile` per file, parents first), then the
    /// source is deleted file by file, each guarded by the version copied, and folder by
    /// folder, deepest first, each only while empty. A file changed (or added) on the server
    /// meanwhile stays in the source folder beside its copy: nothing is lost, and the next
    /// walk finds both. A copy that fails takes back what it made. A tree holding a symlink
    /// (its mark is a property a copy does not carry) is refused before anything is
    /// written; one holding a bundle never comes here (`SyncProvider.moveRemote`).
    ///
    /// Crash half-way: while copying, the source is whole and the destination a part of it
    /// (new items to the next walk, which finds the same bytes as the local files and keeps
    /// them); while deleting, the destination is whole and the source what is not yet
    /// deleted (items the local side moved away: the next pass moves them again, into
    /// names the copies hold, and compares). Either way every file is on the server.
    func moveFolderByCopy(_ source: RemotePath, to destination: RemotePath) async throws(ProviderError) -> RemoteEntry {
        let tree = try await descendants(of: source).filter { $0.path != source }
            .sorted { $0.path.components.count < $1.path.components.count }
        if let odd = tree.first(where: { $0.kind != .file && $0.kind != .folder }) {
            let what = odd.kind == .symlink ? "symlink" : "bundle"
            throw Self.cutRefusal("rename the folder \(source), which holds the \(what) \(odd.path), to \(destination)")
        }
        if try await exists(destination) { throw ProviderError(.filenameCollision, "\(destination) already exists on the server") }
        var made: [RemoteEntry] = []
        do throws(ProviderError) {
            made.append(try await makeFolder(at: destination))
            for item in tree {
                let target = try RemotePath(destination.components + item.path.components.dropFirst(source.components.count))
                made.append(item.kind == .folder ? try await makeFolder(at: target) : try await copyFile(item, to: target))
            }
        } catch {
            await takeBack(made)
            throw error
        }
        if let hook = treeCopied.withLock({ $0 }) { await hook(source) }
        for file in tree where file.kind == .file {
            guard let version = file.etag else { continue }
            try await deleteCopied(file.path, version: version,
                                   copy: RemotePath(destination.components + file.path.components.dropFirst(source.components.count)))
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
}
