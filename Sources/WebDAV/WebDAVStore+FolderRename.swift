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
        for folder in tree.filter({ $0.kind == .folder }).map(\.path).reversed() + [source] where try await !deleteIfEmpty(folder) {
            logger.notice("\(folder) holds items changed or added on the server while it was renamed to \(destination) by a copy; it is kept")
        }
        return try await entry(at: destination)
    }

    /// Deletes the folder at `path` if it is empty (or gone already); false when it holds
    /// something, or another client's lock is on it. The check and the DELETE are made under
    /// a lock on the folder (`Depth: infinity`), so a writer through the server cannot add
    /// a file between the two (its PUT is refused with 423, and it tries again); on a server
    /// not written under locks, they are two requests.
    func deleteIfEmpty(_ path: RemotePath) async throws(ProviderError) -> Bool {
        guard try await writeGuard() == .locks else {
            guard try await children(of: path).isEmpty else { return false }
            do { try await delete(path, version: nil) } catch where error.code == .noSuchItem {}
            return true
        }
        let response = try await sendLock(path, isFolder: true)
        switch response.status.code {
        case 200, 201: break
        case 404, 409: return true
        case 423: return false
        default: throw response.status.providerError("LOCK", path)
        }
        guard let token = response.headers.first(name: "Lock-Token") else {
            throw ProviderError(.cannotSynchronize, "the server answered LOCK \(path) without a lock token")
        }
        let headers = [("If", Self.ifHeader(token: token))]
        // 201: the folder went away and the LOCK made an empty file there, which goes too.
        var empty = response.status.code == 200
        do throws(ProviderError) {
            if empty { empty = try await entry(at: path).kind == .folder }
            if empty { empty = try await children(of: path).isEmpty }
        } catch {
            await unlock(path, token: token, isFolder: true)
            throw error
        }
        guard empty else {
            if response.status.code == 201 { _ = try? await connection.send(connection.request("DELETE", path: paths.requestPath(path), headers: headers)) }
            await unlock(path, token: token, isFolder: true)
            return response.status.code == 201
        }
        let status = try await connection.send(connection.request("DELETE", path: paths.requestPath(path, isFolder: true), headers: headers)).status
        guard (200..<300).contains(status.code) || status.code == 404 else {
            await unlock(path, token: token, isFolder: true)
            throw status.providerError("DELETE", path)
        }
        return true
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
