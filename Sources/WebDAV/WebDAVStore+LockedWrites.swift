import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SyncEngine

// Writes in the `WriteGuard.locks` mode: LOCKs that make a version check and its write one
// step, and uploads and new folders made under a hidden temporary name and moved into place.
extension WebDAVStore {
    /// True when a file or folder made at `path` is made under a temporary name and moved
    /// into place (`WriteGuard.locks`). Not where a MOVE would land elsewhere
    /// (`destinationIsCut`: WsgiDAV, a "?" anywhere in the path or a ";" in its name) on a server whose
    /// conditional headers work: there it is written in place with those headers. (Where
    /// they do not, the MOVE is refused with a message that says why.)
    func movesUploads(to path: RemotePath) async throws(ProviderError) -> Bool {
        guard try await writeGuard() == .locks else { return false }
        return !(destinationIsCut(path) && honoursConditions.withLock { $0 })
    }

    // MARK: Locks

    /// Waits out another client's lock (it lasts one write), longer each time: true once
    /// waited (`waits` counts the waits), false when `lockedRetries` of them are spent.
    static func waitOutLock(_ waits: inout Int, _ what: String) async throws(ProviderError) -> Bool {
        guard waits < lockedRetries else { return false }
        do { try await Task.sleep(for: lockedDelay * (1 << waits)) } catch {
            throw ProviderError(.cancelled, "\(what) was cancelled")
        }
        waits += 1
        return true
    }

    func sendLock(_ path: RemotePath, isFolder: Bool = false) async throws(ProviderError) -> CollectedResponse {
        var request = connection.request("LOCK", path: paths.requestPath(path, isFolder: isFolder), headers: [
            ("Depth", isFolder ? "infinity" : "0"), ("Timeout", Self.lockTimeout), ("Content-Type", "application/xml; charset=utf-8"),
        ])
        request.body = .bytes(ByteBuffer(string: Self.lockBody))
        return try await connection.send(request)
    }

    /// `If: (<token>)`, or a tagged list naming `resource` (RFC 4918 §10.4): then the
    /// token covers the MOVE's destination and nothing is asked of its (our own) source.
    static func ifHeader(token: String, resource: String? = nil) -> String {
        let bracketed = token.hasPrefix("<") ? token : "<\(token)>"
        return (resource.map { "<\($0)> " } ?? "") + "(\(bracketed))"
    }

    func unlock(_ path: RemotePath, token: String, isFolder: Bool = false) async {
        let request = connection.request("UNLOCK", path: paths.requestPath(path, isFolder: isFolder), headers: [("Lock-Token", token)])
        do {
            let status = try await connection.send(request).status
            if status.code == 404 {
                // The item, and with it the lock, is gone (WsgiDAV drops a lock with its file).
                logger.debug("UNLOCK \(path) answered 404: the lock went with the item")
            } else if !(200..<300).contains(status.code) {
                logger.warning("UNLOCK \(path) answered \(status.code); the lock expires by itself", metadata: ["path": "\(path)"])
            }
        } catch {
            logger.warning("cannot UNLOCK \(path) (\(error.message)); the lock expires by itself")
        }
    }

    /// Runs `body` with the token of a lock on `path`, after checking under that lock that
    /// the server still holds `version` there: the check and `body`'s write are one step for
    /// every writer that goes through the server.
    func withVersionLock<T>(_ path: RemotePath, version: ETag,
                            body: (_ token: String) async throws(ProviderError) -> T) async throws(ProviderError) -> T {
        // Checked before the LOCK too: a LOCK of a free name creates an empty file there.
        try await requireVersion(path, version, outsideLock: true)
        var response = try await sendLock(path)
        // Another client's lock lasts one write: waited for a few seconds, as `guarded`
        // does, with the version checked again before each try (a 423 here became a 10 s
        // item error that outlived agreement: two-client test, nginx seed 7).
        var waits = 0
        while response.status.code == 423, try await Self.waitOutLock(&waits, "LOCK \(path)") {
            try await requireVersion(path, version, outsideLock: true)
            response = try await sendLock(path)
        }
        switch response.status.code {
        case 200, 201:
            break
        case 423:
            throw ProviderError(.locked, "\(path) is locked on the server by another client; will retry", underlying: "HTTP 423")
        default:
            throw response.status.providerError("LOCK", path)
        }
        guard let token = response.headers.first(name: "Lock-Token") else {
            throw ProviderError(.cannotSynchronize, "the server answered LOCK \(path) without a lock token")
        }
        do throws(ProviderError) {
            if response.status.code == 201 {
                // The item went away between the check and the LOCK, which made an empty file.
                _ = try? await connection.send(connection.request("DELETE", path: paths.requestPath(path),
                                                                  headers: [("If", Self.ifHeader(token: token))]))
                throw ProviderError(.noSuchItem, "\(path) no longer exists on the server")
            }
            try await requireVersion(path, version)
            let result = try await body(token)
            await unlock(path, token: token)
            return result
        } catch {
            await unlock(path, token: token)
            throw error
        }
    }

    /// Throws `noSuchItem` or `versionMismatch` unless a fresh PROPFIND shows `version` at `path`.
    /// `outsideLock`: checked without our lock on `path`, where a 404 may be another client's
    /// replace half-done: golang.org/x/net/webdav (rclone) and WsgiDAV carry out a MOVE with
    /// `Overwrite: T` as a delete of the destination and then a rename, and a PROPFIND between
    /// the two finds nothing (the loser of two replaces at once was told `noSuchItem`, not
    /// `versionMismatch`). That client holds its lock for that one write, so the 404 is looked
    /// at again as a lock is waited out before the item counts as gone.
    func requireVersion(_ path: RemotePath, _ version: ETag, outsideLock: Bool = false) async throws(ProviderError) {
        var waits = 0
        while true {
            let current: RemoteEntry
            do { current = try await entry(at: path) } catch where error.code == .noSuchItem {
                guard outsideLock, try await Self.waitOutLock(&waits, "the version check of \(path)") else {
                    throw ProviderError(.noSuchItem, "\(path) no longer exists on the server")
                }
                continue
            }
            guard let etag = current.etag, etag.sameValue(as: version) else {
                throw ProviderError(.versionMismatch, "\(path) changed on the server since version \(version)")
            }
            return
        }
    }

    // MARK: Writes on a server that ignores conditions

    /// The name beside `path` an upload or a new folder is made under before it is moved into place.
    func temporary(beside path: RemotePath) throws(ProviderError) -> RemotePath {
        try path.parent.appending(Self.temporaryPrefix + UUID().uuidString)
    }

    /// Moves our own `temporary` to `path`: when `condition` is `mustNotExist` with
    /// `Overwrite: F`, else under a lock on `path` taken after checking its version, with
    /// `Overwrite: T` (the server deletes the old version and renames ours in its place).
    /// The temporary is deleted when it could not be placed.
    func place(_ temporary: RemotePath, at path: RemotePath, condition: WriteCondition, isFolder: Bool = false) async throws(ProviderError) {
        do throws(ProviderError) {
            switch condition {
            case .mustNotExist:
                let status = try await connection.send(connection.request("MOVE", path: paths.requestPath(temporary, isFolder: isFolder), headers:
                    [("Destination", try destinationURL(path, isFolder: isFolder)), ("Overwrite", "F")])).status
                switch status.code {
                case 200..<300: return
                case 412: throw ProviderError(.filenameCollision, "\(path) already exists on the server")
                case 403, 404, 409:
                    // rclone answers a MOVE into a missing folder with 403: only a parent that
                    // is really gone makes it "parent missing"; else it means what it says.
                    if try await !exists(path.parent) {
                        throw ProviderError(.parentMissing, "the folder \(path.parent) does not exist on the server")
                    }
                    throw status.providerError("MOVE", path)
                default: throw status.providerError("MOVE", path)
                }
            case .mustMatch(let version):
                try await withVersionLock(path, version: version) { (token: String) throws(ProviderError) in
                    let status = try await connection.send(connection.request("MOVE", path: paths.requestPath(temporary), headers: [
                        ("Destination", try destinationURL(path)), ("Overwrite", "T"),
                        ("If", Self.ifHeader(token: token, resource: absoluteURL(path))),
                    ])).status
                    guard (200..<300).contains(status.code) else {
                        if status.code == 412 {
                            throw ProviderError(.cannotSynchronize, "the server did not accept its own lock token for \(path); will retry",
                                                underlying: "HTTP 412 on MOVE")
                        }
                        throw status.providerError("MOVE", path)
                    }
                }
            }
        } catch {
            await removeTemporary(temporary, isFolder: isFolder, created: true)
            throw error
        }
    }

    /// Deletes our own `temporary`. When it is not there although it was made (`created`),
    /// or its folder is gone too, another client moved that folder (or one above it) while
    /// the write ran, and the temporary went along with it (rclone lets a folder move in the
    /// middle of a PUT into it; nginx makes a folder moved away again when something is
    /// moved into it, so the folder being there proves nothing): it is looked for by its
    /// name, which only this write used, and deleted where it is now. Rare, so a search of
    /// the whole tree is affordable. A temporary that cannot be deleted is named in the log
    /// (no client lists it). A write that was cancelled still cleans up: this runs outside
    /// the caller's cancellation.
    func removeTemporary(_ temporary: RemotePath, isFolder: Bool = false, created: Bool) async {
        await Task { await self.removeTemporaryNow(temporary, isFolder: isFolder, created: created) }.value
    }

    private func removeTemporaryNow(_ temporary: RemotePath, isFolder: Bool, created: Bool) async {
        do throws(ProviderError) {
            guard try await deleteTemporary(temporary, isFolder: isFolder) == 404 else { return }
            if !created {
                guard !temporary.parent.isRoot, try await !exists(temporary.parent) else { return }
            }
            guard let moved = try await findTemporary(named: temporary.name) else {
                // rclone: a PUT into a folder moved as it began makes the folder again on its
                // disk, which its listings show only once their cache expires.
                lostTemporaries.withLock { _ = $0.insert(temporary.name) }
                logger.debug("our temporary \(temporary) is gone and found nowhere else; it is deleted if a listing shows it later")
                return
            }
            _ = try await deleteTemporary(moved.path, isFolder: moved.kind == .folder)
            logger.info("removed our temporary \(moved.path): another client moved its folder while it was written")
        } catch {
            // Looked for again in every later listing (rclone, loaded, has answered a search
            // for it with a malformed listing while another client moved its folder).
            lostTemporaries.withLock { _ = $0.insert(temporary.name) }
            logger.notice("could not remove our temporary \(temporary) on the server yet (\(error.message)); it is deleted when a listing shows it")
        }
    }

    /// DELETE of our own temporary: its status, 2xx or 404 (gone). Another client's lock
    /// over it (423, 424: a lock of its folder) lasts one write and is waited for; a 5xx or
    /// no answer is tried again, three times in all.
    func deleteTemporary(_ temporary: RemotePath, isFolder: Bool) async throws(ProviderError) -> UInt {
        var attempt = 0
        while true {
            attempt += 1
            let answer: UInt
            do {
                answer = try await connection.send(connection.request("DELETE", path: paths.requestPath(temporary, isFolder: isFolder))).status.code
            } catch where error.code != .cancelled && attempt < 3 {
                continue
            }
            if (200..<300).contains(answer) || answer == 404 { return answer }
            let retried = [423, 424].contains(answer) ? attempt <= Self.lockedRetries : (answer >= 500 && attempt < 3)
            guard retried else { throw ProviderError(.cannotSynchronize, "DELETE \(temporary) answered \(answer)") }
            do { try await Task.sleep(for: Self.lockedDelay * (1 << (attempt - 1))) } catch {
                throw ProviderError(.cancelled, "DELETE \(temporary) was cancelled")
            }
        }
    }

    /// Deletes the temporaries of ours in `entries` (a listing) that were lost earlier.
    func sweepLostTemporaries(in entries: [RemoteEntry]) async {
        guard !lostTemporaries.withLock({ $0.isEmpty }) else { return }
        for entry in entries where lostTemporaries.withLock({ $0.contains(entry.path.name) }) {
            do throws(ProviderError) {
                _ = try await deleteTemporary(entry.path, isFolder: entry.kind == .folder)
                lostTemporaries.withLock { _ = $0.remove(entry.path.name) }
                logger.info("removed our temporary \(entry.path), which the server listed only now")
            } catch {
                logger.debug("cannot remove our temporary \(entry.path) yet: \(error.message)")
            }
        }
    }

    /// The entry of the temporary named `name`, wherever in the tree it is now: from one
    /// Depth infinity PROPFIND where the server allows it, else folder by folder — and on
    /// a server whose listings leave out names beginning with "." (nginx), asked for by
    /// name in each folder they show. Folders that vanish or are refused meanwhile are passed over;
    /// bundle scratch is not entered.
    func findTemporary(named name: String) async throws(ProviderError) -> RemoteEntry? {
        let hidden = name.hasPrefix(".") && !listsDotNames.withLock { $0 }
        if !hidden, depthInfinity.withLock({ $0 }) != false, let entries = try await infiniteListing(of: .root) {
            return entries.first { $0.path.name == name }
        }
        var frontier: [RemotePath] = [.root]
        while let folder = frontier.popLast() {
            let entries: [RemoteEntry]
            do throws(ProviderError) {
                entries = try self.entries(of: try await propfindResponse(folder, depth: "1", isFolder: true), for: folder, method: "PROPFIND")
            } catch where !folder.isRoot {
                continue
            }
            if hidden {
                do { return try await entry(at: try folder.appending(name)) } catch where error.code == .noSuchItem {}
            }
            for entry in entries where entry.path.parent == folder && entry.path != folder {
                if entry.path.name == name { return entry }
                if entry.kind == .folder, !Self.isTemporary(entry.path), !entry.path.name.hasPrefix(BundleManifest.scratchPrefix) {
                    frontier.append(entry.path)
                }
            }
        }
        return nil
    }

    /// The listing of the temporary `temporary` an upload of `size` bytes to `path` was just
    /// written to; throws `serverFailedItem` unless it lists all of them. rclone, loaded,
    /// has listed such a file with 0 bytes right after answering its PUT with success, and
    /// with all of them a moment later (350 ms was not always enough beside the whole test
    /// suite): a short size is looked at again, 50 ms later and then doubling, for about
    /// 3 s in all before the upload counts as cut. A complete upload costs no wait.
    func arrivedEntry(at temporary: RemotePath, size: Int64, of path: RemotePath) async throws(ProviderError) -> RemoteEntry {
        var entry = try await uploadedEntry(at: temporary)
        for attempt in 0..<6 where entry.size != size {
            logger.debug("\(temporary.name) lists \(entry.size) of \(size) bytes after its PUT; looking again")
            try? await Task.sleep(for: .milliseconds(50 << attempt))
            entry = try await uploadedEntry(at: temporary)
        }
        guard entry.size == size else {
            throw ProviderError(.serverFailedItem, "the upload of \(path) arrived incomplete (\(entry.size) of \(size) bytes); it is sent again later")
        }
        return entry
    }

    /// Uploads `file` to a temporary beside `path`, checks that all of it arrived and moves
    /// it into place (see `WriteGuard.locks`).
    func uploadViaTemporary(_ file: OpenFile, _ before: OpenFile.Status, to path: RemotePath, condition: WriteCondition,
                            progress: TransferProgress?) async throws(ProviderError) -> RemoteEntry {
        if case .mustMatch(let version) = condition {
            try await requireVersion(path, version, outsideLock: true)  // fail early, before the bytes are sent
        }
        let temporary = try temporary(beside: path)
        logger.debug("uploading \(path) through \(temporary.name)")
        let sent: RemoteEntry
        var created = true
        do throws(ProviderError) {
            let (status, _) = try await putFile(file, before, at: temporary, headers: [], progress: progress)
            // Refused before a byte was written: nothing to look for if it is not there.
            created = ![401, 403, 404, 409, 412, 413, 423].contains(status.code)
            guard (200..<300).contains(status.code) else {
                // nginx answers a PUT into a missing folder with 500 (its rename fails).
                if [404, 409, 500].contains(status.code), try await !exists(path.parent) {
                    created = false
                    throw ProviderError(.parentMissing, "the folder \(path.parent) does not exist on the server")
                }
                throw status.providerError("PUT", path)
            }
            sent = try await arrivedEntry(at: temporary, size: before.size, of: path)
        } catch {
            await removeTemporary(temporary, created: created)
            if try file.status() != before {
                throw ProviderError(.cannotSynchronize, "\(file.path) changed while it was uploaded; it will be sent again")
            }
            throw error
        }
        try await place(temporary, at: path, condition: condition)
        do {
            var entry = try await uploadedEntry(at: path)
            // A rename keeps the file's time and size, so its ETag too. Another one means
            // another client wrote after the lock was released: keep ours, the next pass
            // sees theirs as a change.
            if let ours = sent.etag {
                if entry.etag?.sameValue(as: ours) != true { entry.etag = ours }
            } else if entry.size != sent.size {
                entry.etag = nil
            }
            return entry
        } catch where Self.landedAnyway(error) {
            return RemoteEntry(path: path, kind: .file, size: before.size, etag: sent.etag)
        }
    }

    /// True when `path` exists (the root always does).
    func exists(_ path: RemotePath) async throws(ProviderError) -> Bool {
        if path.isRoot { return true }
        do {
            _ = try await entry(at: path)
            return true
        } catch where error.code == .noSuchItem {
            return false
        }
    }
}
