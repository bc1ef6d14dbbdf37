import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SyncEngine

/// How this store keeps the contract's promise that a write of an existing item is
/// guarded by its version, decided once per store by `probeWriteGuard()`.
enum WriteGuard: Sendable, Equatable {
    /// The server honours `If-Match` and `If-None-Match` (Apache mod_dav, Nextcloud,
    /// ownCloud): every write carries them. On Apache a PUT's condition is checked before
    /// its body is read, so two replaces at once can both land (README, "Known limit").
    case conditionalHeaders
    /// The server ignores both headers (a PUT with a stale `If-Match` overwrites, one with
    /// `If-None-Match: *` replaces an existing file), or lists no ETag that an `If-Match`
    /// could carry, but enforces WebDAV locks and answers `Overwrite: F` with 412:
    /// `rclone serve webdav` and other servers built on golang.org/x/net/webdav (which also
    /// write PUT bodies in place), nginx with `dav_ext_lock`. Also a server that honours
    /// both headers but writes a PUT into the file as it arrives (WsgiDAV), when its locks
    /// work: an upload cut short would leave a truncated file there. Then:
    /// - a file is uploaded under a hidden temporary name beside the target, its size
    ///   checked, and moved into place, so a cut upload never leaves a truncated file where
    ///   the old version was, and no reader sees a half-written one;
    /// - a create is that MOVE with `Overwrite: F` (the server checks and renames under its
    ///   own per-request locks), a new folder an MKCOL of a temporary name moved the same way
    ///   (MKCOL on an existing folder answers 201 there);
    /// - a replace or a guarded delete LOCKs the target, re-reads its version under the lock
    ///   and only then sends the MOVE or DELETE with the lock token: every other writer
    ///   through that server gets 423 meanwhile, so the check and the write are one step.
    /// What this cannot cover: a guarded MOVE (its destination would need a lock too, and
    /// a LOCK of a free name creates a file there) is checked just before it is sent — a
    /// change that slips in moves along with the name and is seen as an edit by the next
    /// pass, nothing is lost; and writes that bypass the server (to the served directory
    /// on its disk) are seen only once its directory cache expires.
    case locks
    /// The server ignores `If-Match` and offers nothing to guard writes with: writing to
    /// it could silently overwrite what others wrote, so every operation is refused.
    case unsafe(String)
}

extension WebDAVStore {
    static let probePrefix = temporaryPrefix + "probe-"
    static let lockTimeout = "Second-60"
    static let lockBody = """
        <?xml version="1.0" encoding="utf-8"?>
        <d:lockinfo xmlns:d="DAV:"><d:lockscope><d:exclusive/></d:lockscope><d:locktype><d:write/></d:locktype><d:owner>tidesync</d:owner></d:lockinfo>
        """

    /// The way writes are guarded on this server; probes it on first use (one probe at a
    /// time, its verdict kept). Throws `cannotSynchronize` for a server that ignores
    /// `If-Match` and has no working locks, and what the probe met when it could not finish
    /// (unreachable, wrong password): then the next call probes again.
    func writeGuard() async throws(ProviderError) -> WriteGuard {
        let task = guardProbe.withLock { state in
            if let state { return state }
            let task = Task { await self.probeWriteGuard() }
            state = task
            return task
        }
        switch await task.value {
        case .success(.unsafe(let reason)):
            throw ProviderError(.cannotSynchronize, reason)
        case .success(let mode):
            return mode
        case .failure(let error):
            guardProbe.withLock { if $0 == task { $0 = nil } }
            throw error
        }
    }

    func probeWriteGuard() async -> Result<WriteGuard, ProviderError> {
        do throws(ProviderError) { return .success(try await probe()) } catch { return .failure(error) }
    }

    /// Creates a scratch file (`.tidesync-tmp-probe-…`, hidden from listings) and tests on
    /// it what a guarded write needs (`missingGuarantees`): a server that lists versions and
    /// refuses a PUT over an existing file with a stale `If-Match` (and one with
    /// `If-None-Match: *`) is written to with those headers (Apache, lighttpd, sabre/dav),
    /// unless it writes a PUT into the file as it arrives (`writesInPlace`). A server that
    /// answers such a PUT on an *absent* file with 201 (WsgiDAV) still guards writes where
    /// it matters. Otherwise its locks and `Overwrite: F` are probed on that file before it
    /// is deleted. The scratch file's name is this client's (`probeName`): what a probe
    /// killed half-way left is written over and deleted by this one.
    func probe() async throws(ProviderError) -> WriteGuard {
        var scratch = try RemotePath([probeName])
        var response = try await probePut(scratch, headers: [])  // our own name: nothing to guard
        if response.status.code == 423 {
            // A killed probe's lock on the name (rclone keeps it a minute): a name of its own
            // this time; the leftover goes at a later start.
            scratch = try RemotePath([Self.probePrefix + UUID().uuidString])
            response = try await probePut(scratch, headers: [])
        }
        let created = response.status
        switch created.code {
        case 200..<300:
            break
        case 401, 500..<600:
            throw created.providerError("PUT", scratch)
        default:
            // A read-only folder (403) or a server that refuses the empty PUT: nothing can be
            // learned here, and writes it refuses cannot overwrite anything either.
            logger.warning("cannot check how the server guards writes (a PUT of a scratch file in the sync folder was answered \(created.code)); assuming it honours If-Match")
            return .conditionalHeaders
        }
        var lacks: [String]
        let server = response.headers.first(name: "Server").map { " (\($0))" } ?? ""
        do throws(ProviderError) {
            try await probeDotNames(scratch)
            try await probeDestinations(scratch, server: server)
            lacks = try await missingGuarantees(scratch)
            // A store of one connection (one that only makes a folder) cannot look while a
            // PUT holds it: it takes the server for atomic, as before this check.
            if lacks.isEmpty, connection.connections > 1, try await writesInPlace(scratch, server: server) { lacks.append(Self.inPlace) }
        } catch {
            await removeProbeFiles([scratch], token: nil)
            throw error
        }
        guard !lacks.isEmpty else {
            // The second file is made only by the locks check; one a killed probe left goes too.
            await removeProbeFiles([scratch, try RemotePath([scratch.name + "-b"])], token: nil)
            return .conditionalHeaders
        }
        return try await probeLockMode(scratch, lacks: lacks, server: server)
    }

    static let versionless = "lists neither getetag nor getlastmodified"
    static let inPlace = "writes a PUT into the file as it arrives (readers see it half-written, a cut upload leaves it truncated)"

    /// Whether a listing of the root names `scratch` (a name beginning with "."): nginx's
    /// dav-ext module leaves such names out of every PROPFIND Depth 1, while it serves them.
    func probeDotNames(_ scratch: RemotePath) async throws(ProviderError) {
        let response = try await propfindResponse(.root, depth: "1", isFolder: true)
        guard response.status.code == 207 else { throw response.status.providerError("PROPFIND", .root) }
        let listed = try MultistatusParser.parse(response.body).contains { paths.remotePath(href: $0.href) == scratch }
        guard !listed else { return }
        listsDotNames.withLock { $0 = false }
        logger.notice("the WebDAV server leaves names that begin with \".\" out of its listings: tidesync asks for each such item it has synced by name; one another client adds under such a name is not seen until this machine has an item of that name")
    }

    /// What the server lacks for writes guarded by conditional headers, tested on the
    /// existing `scratch`: versions in its listings (without `getetag`, versions are made
    /// from `getlastmodified` and `getcontentlength`, which no `If-Match` can carry), a 412
    /// for a PUT with a stale `If-Match`, and one for a PUT with `If-None-Match: *`.
    func missingGuarantees(_ scratch: RemotePath) async throws(ProviderError) -> [String] {
        var lacks: [String] = []
        let response = try await propfindResponse(scratch, depth: "0", isFolder: false)
        guard response.status.code == 207 else { throw response.status.providerError("PROPFIND", scratch) }
        guard let listed = try MultistatusParser.parse(response.body).first(where: { paths.remotePath(href: $0.href) == scratch }) else {
            throw ProviderError(.cannotSynchronize, "the server's answer for \(scratch) did not describe it; check the remote URL")
        }
        if listed.etag.flatMap(ETag.init(header:)) == nil {
            guard listed.lastModified.flatMap(HTTPDate.parse) != nil else { return [Self.versionless] }
            listsVersions.withLock { $0 = false }
            lacks.append("lists no getetag (versions are made from getlastmodified and getcontentlength)")
        }
        for (name, value) in [("If-Match", "\"tidesync-probe-no-such-version\""), ("If-None-Match", "*")] {
            let status = try await probePut(scratch, headers: [(name, value)]).status
            switch status.code {
            case 412: continue
            case 401, 500..<600: throw status.providerError("PUT", scratch)
            case 200..<300: lacks.append("ignores \(name)")
            default: lacks.append("answers a PUT over an existing file with a stale \(name) with \(status.code), not 412")
            }
        }
        return lacks
    }

    /// A PUT of `path` with `headers` and `body` (empty by default); the answer.
    func probePut(_ path: RemotePath, headers: [(String, String)] = [], body: ByteBuffer = ByteBuffer()) async throws(ProviderError) -> CollectedResponse {
        var put = connection.request("PUT", path: paths.requestPath(path), headers: headers)
        put.body = .bytes(body)
        return try await connection.send(put)
    }

    /// The verdict for a server that `lacks` something for conditional writes: its locks
    /// and `Overwrite: F` are probed on `scratch` (which exists) and a second file.
    /// `server` names the software, as its `Server` header did.
    func probeLockMode(_ scratch: RemotePath, lacks: [String], server: String) async throws(ProviderError) -> WriteGuard {
        let what = "the WebDAV server at \(connection.endpoint.description)\(server) \(lacks.joined(separator: " and "))"
        if lacks == [Self.versionless] {
            await removeProbeFiles([scratch], token: nil)
            return .unsafe("\(what): tidesync cannot tell one version of a file from another there, so it does not sync with it")
        }
        logger.notice("the server\(server) \(lacks.joined(separator: " and ")); checking its locks")
        let other = try RemotePath([scratch.name + "-b"])
        var token: String?
        let verdict: String?
        do throws(ProviderError) {
            verdict = try await probeLocks(scratch, other: other, token: &token)
        } catch {
            await removeProbeFiles([scratch, other], token: token)
            throw error
        }
        await removeProbeFiles([scratch, other], token: token)
        switch verdict {
        case nil:
            logger.notice("\(what); tidesync guards writes there with WebDAV locks and moves uploads into place")
            honoursConditions.withLock { $0 = lacks == [Self.inPlace] }
            return .locks
        case let reason? where lacks == [Self.inPlace]:
            // Its conditional headers still guard every write; only a cut upload is exposed.
            logger.warning("\(what), and its locks cannot be used instead (it \(reason)): tidesync guards writes there with If-Match, and an upload cut short leaves a truncated file on the server until the next upload")
            return .conditionalHeaders
        case let reason?:
            return .unsafe("\(what) and \(reason): tidesync could silently overwrite changes made by others there, so it does not sync with it. Use a server that honours conditional requests (Nextcloud, ownCloud, Apache mod_dav, lighttpd, WsgiDAV) or one with working locks (rclone serve webdav, nginx with dav_ext_lock)")
        }
    }

    /// Nil when the server enforces locks and `Overwrite: F` on the scratch files; else why not.
    func probeLocks(_ scratch: RemotePath, other: RemotePath, token: inout String?) async throws(ProviderError) -> String? {
        var put = connection.request("PUT", path: paths.requestPath(other), headers: [])
        put.body = .bytes(ByteBuffer())
        let created = try await connection.send(put).status
        guard (200..<300).contains(created.code) else { throw created.providerError("PUT", other) }
        let move = try await connection.send(connection.request("MOVE", path: paths.requestPath(scratch), headers:
            [("Destination", absoluteURL(other)), ("Overwrite", "F")])).status
        if (200..<300).contains(move.code) { return "overwrites the destination of a MOVE sent with Overwrite: F" }
        let lock = try await sendLock(scratch)
        guard (200..<300).contains(lock.status.code), let held = lock.headers.first(name: "Lock-Token") else {
            return "does not support LOCK (answered \(lock.status.code))"
        }
        token = held
        var intruder = connection.request("PUT", path: paths.requestPath(scratch), headers: [])
        intruder.body = .bytes(ByteBuffer(string: "x"))
        let blocked = try await connection.send(intruder).status
        guard blocked.code == 423 else { return "does not enforce its locks (a PUT without the lock token was answered \(blocked.code))" }
        let delete = try await connection.send(connection.request("DELETE", path: paths.requestPath(scratch),
                                                                  headers: [("If", Self.ifHeader(token: held))])).status
        guard (200..<300).contains(delete.code) else { return "refuses its own lock token (DELETE answered \(delete.code))" }
        return nil
    }

    /// The probe's files and lock, whatever state the probe stopped in: the locked file is
    /// deleted with its token (untagged, as rclone takes it; tagged, as Apache needs for a
    /// DELETE) and the lock released (rclone keeps a lock on a name after its file is
    /// deleted, and answers a DELETE without the token 423), then every other file is
    /// deleted. A request the server fails or does not answer (a stall under load) is tried
    /// three times; a file still left is named in the log (hidden: no client lists
    /// `.tidesync-tmp-` names).
    func removeProbeFiles(_ files: [RemotePath], token: String?) async {
        var left = files
        if let token {
            let tagged = "<\(absoluteURL(files[0]))> " + Self.ifHeader(token: token)
            var removed = false
            for header in [Self.ifHeader(token: token), tagged] where !removed {
                removed = await removeProbeFile(files[0], headers: [("If", header)])
            }
            await unlock(files[0], token: token)
            if removed { left.removeFirst() }
        }
        for file in left where !(await removeProbeFile(file, headers: [])) {
            logger.notice("could not remove the probe's scratch file \(file) on the server; no client lists it, and it can be deleted by hand")
        }
    }

    /// DELETE of a probe file: true once it is gone, false when refused; a failure or a 5xx
    /// is tried again, three times in all.
    func removeProbeFile(_ file: RemotePath, headers: [(String, String)]) async -> Bool {
        for attempt in 0..<3 {
            if attempt > 0 { try? await Task.sleep(for: .milliseconds(250 << attempt)) }
            let status: HTTPResponseStatus
            do { status = try await connection.send(connection.request("DELETE", path: paths.requestPath(file), headers: headers)).status } catch {
                logger.debug("removing the probe's \(file) failed: \(error)")
                continue
            }
            if (200..<300).contains(status.code) || status.code == 404 { return true }
            logger.debug("removing the probe's \(file) was answered \(status.code)")
            if status.code < 500 { return false }
        }
        return false
    }

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
        try await requireVersion(path, version)
        var response = try await sendLock(path)
        // Another client's lock lasts one write: waited for a few seconds, as `guarded`
        // does, with the version checked again before each try (a 423 here became a 10 s
        // item error that outlived agreement: two-client test, nginx seed 7).
        var waits = 0
        while response.status.code == 423, waits < Self.lockedRetries {
            do { try await Task.sleep(for: Self.lockedDelay * (1 << waits)) } catch {
                throw ProviderError(.cancelled, "LOCK \(path) was cancelled")
            }
            waits += 1
            try await requireVersion(path, version)
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
    func requireVersion(_ path: RemotePath, _ version: ETag) async throws(ProviderError) {
        let current: RemoteEntry
        do { current = try await entry(at: path) } catch where error.code == .noSuchItem {
            throw ProviderError(.noSuchItem, "\(path) no longer exists on the server")
        }
        guard let etag = current.etag, etag.sameValue(as: version) else {
            throw ProviderError(.versionMismatch, "\(path) changed on the server since version \(version)")
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
            try await requireVersion(path, version)  // fail early, before the bytes are sent
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
