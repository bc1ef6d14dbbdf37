import Foundation
import SyncEngine

// WsgiDAV unquotes a MOVE's (or COPY's) `Destination` and then parses it as a URL: an
// encoded "?" starts a query wherever it is, and a ";" in the last segment starts
// parameters, so the item lands at the part of the path before that character (a file
// moved into a folder "what?" became a file "what"). The probe finds such a server once;
// no MOVE or COPY is then sent where it would land elsewhere: uploads there are written in
// place (guarded by `If-Match`), a file is renamed to such a name by copying it, and a
// folder is not renamed to one (an error that names the cause).
extension WebDAVStore {
    /// True when a MOVE or COPY to `path` would land at another name on this server: it cuts
    /// a `Destination` (`cutsDestinations`), and a part of `path` has a "?" or a ";".
    func destinationIsCut(_ path: RemotePath) -> Bool {
        // A ";" starts parameters only in the last segment (a folder's URL ends in "/").
        cutsDestinations.withLock { $0 } && (path.components.contains { $0.contains("?") } || path.name.contains(";"))
    }

    /// `absoluteURL` of the destination of a MOVE or COPY; `cannotSynchronize` when the
    /// server would put the item elsewhere (`destinationIsCut`).
    func destinationURL(_ path: RemotePath, isFolder: Bool = false) throws(ProviderError) -> String {
        guard !destinationIsCut(path) else { throw Self.cutRefusal("move or copy an item to \(path)") }
        return absoluteURL(path, isFolder: isFolder)
    }

    /// Why the server cannot `action` (a MOVE or COPY whose destination it would cut).
    static func cutRefusal(_ action: String) -> ProviderError {
        ProviderError(.cannotSynchronize, "the server cannot \(action): it takes a \"?\" or \";\" in the destination for the end of the name (WsgiDAV); rename it without those characters, or use another server",
                      underlying: "a MOVE there would land at the part of the name before that character")
    }

    /// Moves a probe file (`scratch` with "-c") to a name with "?" and ";" and looks where it
    /// landed: found at a cut name (the part before either character), it sets
    /// `cutsDestinations`. A server that refuses the MOVE, or an answer that finds the file
    /// nowhere, tells nothing (its renames fail on their own). Every name the file may be
    /// at is removed afterwards (a 404 counts as removed).
    func probeDestinations(_ scratch: RemotePath, server: String) async throws(ProviderError) {
        let source = try RemotePath([scratch.name + "-c"])
        let target = try RemotePath([scratch.name + "-d?e;f"])
        let cuts = [try RemotePath([scratch.name + "-d"]), try RemotePath([scratch.name + "-d?e"])]
        var cut = false
        var moved: UInt = 0
        do throws(ProviderError) {
            let created = try await probePut(source).status
            guard (200..<300).contains(created.code) else { throw created.providerError("PUT", source) }
            // Overwrite: a killed probe's file at the name must not decide the answer.
            moved = try await connection.send(connection.request("MOVE", path: paths.requestPath(source), headers: [
                ("Destination", absoluteURL(target)), ("Overwrite", "T"),
            ])).status.code
            if (200..<300).contains(moved), try await !exists(target) {
                for name in cuts where try await exists(name) { cut = true }
            }
        } catch {
            await removeProbeFiles([source, target] + cuts, token: nil)
            throw error
        }
        await removeProbeFiles([source, target] + cuts, token: nil)
        guard cut else { return }
        cutsDestinations.withLock { $0 = true }
        logger.notice("the server\(server) moves an item to the part of its new name before a \"?\" or \";\" (a MOVE there was answered \(moved) and landed at the shorter name): tidesync writes items under such names in place, renames a file to such a name by copying it, and cannot rename a folder, a bundle or a symlink to one")
    }

    /// `move` of a file to a name the server would cut (`destinationIsCut`): a GET of the
    /// `version` asked for (or of what is there), a PUT at `destination` that must not
    /// replace anything, then a DELETE of the source guarded by the version copied. When
    /// the source changed in between, it stays beside the copy (the next walk finds both:
    /// nothing is lost). A folder is refused.
    func moveByCopy(_ source: RemotePath, to destination: RemotePath, version: ETag?) async throws(ProviderError) -> RemoteEntry {
        let current = try await entry(at: source)
        guard current.kind == .file else {
            let what = current.kind == .symlink ? "symlink" : current.kind == .bundle ? "bundle" : "folder"
            throw Self.cutRefusal("rename the \(what) \(source) to \(destination)")
        }
        if let version, current.etag.map({ !$0.sameValue(as: version) }) ?? true {
            throw ProviderError(.versionMismatch, "\(source) changed on the server since version \(version)")
        }
        guard let copied = version ?? current.etag else {
            throw ProviderError(.cannotSynchronize, "\(source) cannot be renamed to \(destination) by a copy: the server lists no version for it to guard the delete")
        }
        // A scratch file as big as the file (in the temporary folder: a full-size copy there).
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("tidesync-rename-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        _ = try await download(source, range: nil, version: copied, to: scratch, progress: nil)
        let placed = try await upload(from: scratch, to: destination, condition: .mustNotExist, progress: nil)
        do {
            try await delete(source, version: copied)
        } catch where error.code == .versionMismatch || error.code == .deletionRejected {
            logger.notice("\(source) changed on the server while it was renamed to \(destination) by a copy; both are kept")
        } catch where error.code == .noSuchItem {
            logger.info("\(source) was gone from the server when its copy at \(destination) was made")
        } catch {
            // Not renamed after all: the copy goes again (guarded by its own version, out of
            // reach of a cancellation), so a retry does not meet it and fail for good.
            if let etag = placed.etag {
                await Task { try? await self.delete(destination, version: etag) }.value
            }
            throw error
        }
        return placed
    }
}
