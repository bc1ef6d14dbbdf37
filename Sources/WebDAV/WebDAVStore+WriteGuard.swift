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
        let task = startWriteGuard()
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

    /// Starts the probe unless it runs or ran; returns its task.
    @discardableResult
    func startWriteGuard() -> Task<Result<WriteGuard, ProviderError>, Never> {
        guardProbe.withLock { state in
            if let state { return state }
            let task = Task { await self.probeWriteGuard() }
            state = task
            return task
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
}
