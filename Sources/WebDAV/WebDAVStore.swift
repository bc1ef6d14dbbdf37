import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Synchronization
import SyncEngine

/// A `RemoteStore` on a WebDAV server (Apache mod_dav, Nextcloud, ownCloud, rclone).
///
/// Every write of an existing item carries `If-Match` with the version it is based on;
/// creates carry `If-None-Match: *`. A 412 becomes `versionMismatch` only after a fresh
/// PROPFIND shows another version: Apache answers its own weak ETag with 412 during the
/// second after a change, so when the value is unchanged the request is retried after
/// that second.
///
/// Before its first listing or write the store checks that the server honours `If-Match`
/// at all (`writeGuard()`): `rclone serve webdav` does not, and there writes are guarded
/// with WebDAV locks and uploads moved into place instead (`WriteGuard.locks`); a server
/// with neither is refused. Call `shutdown()` when done.
public final class WebDAVStore: RemoteStore {
    let connection: WebDAVConnection
    let paths: WebDAVPath
    let logger: Logger
    /// Nil until the first recursive listing; false once the server refused Depth infinity.
    let depthInfinity = Mutex<Bool?>(nil)
    /// False once the server answered COPY with "not allowed" or "not implemented".
    let copies = Mutex(true)
    /// The names of our own temporaries that could not be found to be deleted: deleted
    /// when a later listing shows them (`sweepLostTemporaries`).
    let lostTemporaries = Mutex<Set<String>>([])
    /// How often a write refused with 423 or 424 (another client's write under way holds
    /// a lock) is tried again before the item backs off, and the first wait (doubling).
    static let lockedRetries = 4
    static let lockedDelay = Duration.milliseconds(250)
    /// The probe of how writes are guarded on this server (`writeGuard()`), once started.
    let guardProbe = Mutex<Task<Result<WriteGuard, ProviderError>, Never>?>(nil)
    /// False once the probe found that listings carry no `getetag` (nginx): versions are
    /// then made from modification time and size (`WebDAVStore+Versions.swift`).
    let listsVersions = Mutex(true)
    /// False once the probe found that listings leave out names beginning with "." (nginx's
    /// dav-ext module): a listing says so (`RemoteListing.hidesDotNames`).
    let listsDotNames = Mutex(true)
    /// True once the probe chose locks only because a PUT is written in place, on a server
    /// whose conditional headers work (WsgiDAV): see `movesUploads(to:)`.
    let honoursConditions = Mutex(false)
    /// True once the probe found that a MOVE to a name with "?" or ";" lands elsewhere
    /// (WsgiDAV): see `WebDAVStore+Destinations.swift`.
    let cutsDestinations = Mutex(false)
    /// How often a 412 on an unchanged version is retried, and after how long.
    static let weakETagRetries = 4
    static let weakETagDelay = Duration.milliseconds(1100)

    /// The name of the write-guard probe's scratch file (`probe()`).
    let probeName: String
    /// Where the probe keeps what it proved about the server's PUT between starts (nil:
    /// nowhere, it is proven at every start).
    let putVerdicts: PutVerdictMemory?

    /// A store on `endpoint`, with up to `connections` kept-alive connections; every
    /// request is held to `limits` (a connect timeout and a low-speed limit). After the
    /// server answers 401, the next request asks `passwordSource` for the password again.
    /// `probeOwner` names this client's probe files, the same at every start, so a probe
    /// killed half-way (its scratch files are left on the server) is cleaned up by the next
    /// one; it must differ between clients of one server folder (nil: a fresh name each time).
    /// `putVerdicts` keeps the costliest of the probe's findings between starts.
    public init(endpoint: WebDAVEndpoint, connections: Int = 8, limits: TransferLimits = TransferLimits(),
                passwordSource: PasswordSource? = nil, probeOwner: String? = nil, putVerdicts: PutVerdictMemory? = nil,
                logger: Logger = Logger(label: "tidesync.webdav")) {
        connection = WebDAVConnection(endpoint: endpoint, connections: connections, limits: limits,
                                      passwordSource: passwordSource)
        paths = endpoint.paths
        probeName = Self.probePrefix + (probeOwner ?? UUID().uuidString)
        self.putVerdicts = putVerdicts
        self.logger = logger
    }

    /// Closes the connections. The store must not be used afterwards.
    public func shutdown() async { await connection.shutdown() }

    static let propfindBody = """
        <?xml version="1.0" encoding="utf-8"?>
        <d:propfind xmlns:d="DAV:" xmlns:oc="\(MultistatusParser.ownCloudNamespace)" xmlns:ts="\(MultistatusParser.tidesyncNamespace)">
        <d:prop><d:resourcetype/><d:getcontentlength/><d:getetag/><d:getlastmodified/><oc:fileid/><oc:checksums/><ts:symlink-target/></d:prop>
        </d:propfind>
        """

    /// The raw answer to PROPFIND `path` at `depth` (a folder URL gets a trailing slash).
    /// A folder listing (Depth 1) answered 500 is asked for twice more, 100 and 200 ms later: WsgiDAV fails
    /// a PROPFIND Depth 1 with 500 when a member goes (another client's delete or move)
    /// between its reading the folder and describing that member, and a pass should not
    /// fail for that; so is a 207 of any depth cut short (`endsMultistatus`).
    func propfindResponse(_ path: RemotePath, depth: String, isFolder: Bool) async throws(ProviderError) -> CollectedResponse {
        var request = connection.request("PROPFIND", path: paths.requestPath(path, isFolder: isFolder),
                                         headers: [("Depth", depth), ("Content-Type", "application/xml; charset=utf-8")])
        request.body = .bytes(ByteBuffer(string: Self.propfindBody))
        var attempt = 0
        while true {
            let response = try await connection.send(request)
            attempt += 1
            // rclone (golang.org/x/net/webdav) cuts a 207 short when an item vanishes while it
            // walks, after its answer had begun.
            let failed = (response.status.code == 500 && depth == "1") || (response.status.code == 207 && !Self.endsMultistatus(response.body))
            guard failed, attempt < 3, !Task.isCancelled else { return response }
            logger.debug("PROPFIND \(path) answered \(response.status.code)\(response.status.code == 207 ? " cut short" : ""); asking again")
            try? await Task.sleep(for: .milliseconds(100 * attempt))
        }
    }

    /// True when `body` ends with the multistatus element's end (`</x:multistatus>`, space
    /// allowed before the `>`, or an empty `<x:multistatus …/>`), as a whole 207 answer does.
    /// One that ends otherwise (a comment after the root, which no server tried sends) is
    /// asked for twice more, and then parsed as it is.
    static func endsMultistatus(_ body: Data) -> Bool {
        let spaces: Set<UInt8> = [0x20, 0x0A, 0x0D, 0x09]
        let tail = Array(body.suffix(4096))
        guard let end = tail.lastIndex(where: { !spaces.contains($0) }), tail[end] == UInt8(ascii: ">"),
              let start = tail[...end].lastIndex(of: UInt8(ascii: "<")) else { return false }
        let tag = String(decoding: tail[start...end], as: UTF8.self)
        let name = tag.dropFirst(tag.hasPrefix("</") ? 2 : 1).prefix { !spaces.contains($0.asciiValue ?? 0) && $0 != ">" && $0 != "/" }
        guard name == "multistatus" || name.hasSuffix(":multistatus") else { return false }
        return tag.hasPrefix("</") || tag.hasSuffix("/>")
    }

    /// PROPFIND `path` at `depth`: the entries the answer names, which must include
    /// `path` itself — an answer without it (an empty 207 from a proxy, a wrong base
    /// path) would otherwise read as "everything was deleted".
    func propfind(_ path: RemotePath, depth: String, isFolder: Bool) async throws(ProviderError) -> [RemoteEntry] {
        let response = try await propfindResponse(path, depth: depth, isFolder: isFolder)
        if response.status.code == 301 || response.status.code == 308, !isFolder {
            return try await propfind(path, depth: depth, isFolder: true)
        }
        return try entries(of: response, for: path, method: "PROPFIND")
    }

    func entries(of response: CollectedResponse, for path: RemotePath, method: String) throws(ProviderError) -> [RemoteEntry] {
        guard response.status.code == 207 else {
            throw response.status.providerError(method, path, location: response.headers.first(name: "Location"))
        }
        var seen = Set<RemotePath>()
        let entries = try MultistatusParser.parse(response.body).compactMap { (item: MultistatusResponse) -> RemoteEntry? in
            guard let entry = self.entry(from: item), seen.insert(entry.path).inserted else { return nil }
            return entry
        }
        guard entries.contains(where: { $0.path == path }) else {
            throw ProviderError(.cannotSynchronize, "the server's answer for \(path.isRoot ? "the sync folder" : path.description) did not describe it; check the remote URL")
        }
        return entries
    }

    func entry(from response: MultistatusResponse) -> RemoteEntry? {
        guard let path = paths.remotePath(href: response.href) else {
            logger.warning("ignoring an entry the server listed outside the sync folder or with an unusable name",
                           metadata: ["href": "\(response.href.prefix(300))"])
            return nil
        }
        let kind: ItemKind = response.isCollection ? .folder : (response.symlinkTarget != nil ? .symlink : .file)
        return RemoteEntry(path: path, kind: kind, size: kind == .folder ? 0 : max(0, response.contentLength ?? 0),
                           etag: listedVersion(response, kind: kind), fileID: response.fileID,
                           modificationDate: response.lastModified.flatMap(HTTPDate.parse),
                           symlinkTarget: kind == .symlink ? response.symlinkTarget : nil,
                           checksums: kind == .file ? response.checksums : nil)
    }

    public func entry(at path: RemotePath) async throws(ProviderError) -> RemoteEntry {
        let entries = try await propfind(path, depth: "0", isFolder: path.isRoot)
        return entries.first { $0.path == path }!
    }

    public func children(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry] {
        _ = try await writeGuard()  // refuse a server we must not write to before anything is synced
        return try await children(of: path, in: try await propfindResponse(path, depth: "1", isFolder: true))
    }

    /// The children of the folder at `path` that `response` (to PROPFIND Depth 1) names.
    func children(of path: RemotePath, in response: CollectedResponse) async throws(ProviderError) -> [RemoteEntry] {
        let entries: [RemoteEntry]
        do {
            entries = try self.entries(of: response, for: path, method: "PROPFIND")
        } catch where (error.code == .cannotSynchronize || error.code == .permissionDenied) && !path.isRoot {
            // Apache answers a folder URL (trailing slash) naming a file with 400, lighttpd with 403.
            if try await entry(at: path).kind != .folder {
                throw ProviderError(.noSuchItem, "\(path) is not a folder on the server")
            }
            throw error
        }
        guard entries.first(where: { $0.path == path })?.kind == .folder else {
            throw ProviderError(.noSuchItem, "\(path) is not a folder on the server")
        }
        await sweepLostTemporaries(in: entries)
        return entries.filter { $0.path.parent == path && $0.path != path && !Self.isTemporary($0.path) }
    }

    public func descendants(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry] {
        try await listing(below: path).complete(below: path)
    }

    /// Where the listings name it; on a server whose listings leave out names beginning
    /// with "." (nginx), asked for by name in every folder (`findTemporary`).
    public func items(named name: String) async throws(ProviderError) -> [RemotePath] {
        _ = try await writeGuard()
        guard name.hasPrefix("."), !listsDotNames.withLock({ $0 }) else {
            return try await descendants(of: .root).filter { $0.path.name == name }.map(\.path)
        }
        return try await findTemporary(named: name).map { [$0.path] } ?? []
    }

    public func listing(below path: RemotePath) async throws(ProviderError) -> RemoteListing {
        var collected = RemoteListing(entries: [])
        var listing = try await walk(below: path) { collected.collect($0) }
        listing.entries = collected.entries
        return listing
    }

    /// One `Depth: infinity` answer is handed over at once; a walk folder by folder hands
    /// each folder's entries over as they come, in the same order every time.
    ///
    /// The first walk after a start asks its `Depth: infinity` PROPFIND while the write
    /// guard's probe runs (most of a `run --once` with nothing changed was the two one after
    /// the other); nothing is swept or handed over before the probe's verdict. Not with
    /// fewer than four connections: the probe's quick look at a held PUT needs one free
    /// within its 250 ms.
    public func walk(below path: RemotePath, visit: ([RemoteEntry]) -> Void) async throws(ProviderError) -> RemoteListing {
        if connection.connections >= 4 { startWriteGuard() } else { _ = try await writeGuard() }
        var listing: RemoteListing
        if depthInfinity.withLock({ $0 }) != false, let entries = try await guardedInfiniteListing(of: path) {
            _ = try await writeGuard()
            await sweepLostTemporaries(in: entries)
            visit(entries.filter { $0.path != path && $0.path.isDescendant(of: path) && !Self.isTemporary($0.path) })
            listing = RemoteListing(entries: [])
        } else {
            _ = try await writeGuard()
            listing = try await walk(path, visit: visit)
        }
        listing.hidesDotNames = !listsDotNames.withLock { $0 }
        return listing
    }

    /// `infiniteListing(of:)`; when it fails, the probe's verdict is awaited first (a walk
    /// never returns while the probe still writes), and its failure is the one reported.
    func guardedInfiniteListing(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry]? {
        do {
            return try await infiniteListing(of: path)
        } catch {
            _ = try await writeGuard()
            throw error
        }
    }

    /// One `Depth: infinity` PROPFIND, or nil when the server refuses it (Apache: 403),
    /// its answer is too large, or it silently answers only one level (SabreDAV without
    /// infinity enabled) — then the caller walks, and later calls skip straight to walking.
    func infiniteListing(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry]? {
        let response: CollectedResponse
        do {
            response = try await propfindResponse(path, depth: "infinity", isFolder: true)
        } catch where error.code == .cannotSynchronize {
            return refuseInfinity("its answer to PROPFIND Depth infinity was too large")
        }
        if response.status.code == 403 || response.status.code == 501 {
            return refuseInfinity("the server refuses PROPFIND Depth infinity")
        }
        let entries = try entries(of: response, for: path, method: "PROPFIND")
        if depthInfinity.withLock({ $0 }) == nil {
            // Trust infinity only once it has shown a grandchild, or a folder that really is empty.
            let depth = path.components.count
            if !entries.contains(where: { $0.path.components.count > depth + 1 }),
               let folder = entries.first(where: { $0.kind == .folder && $0.path.components.count == depth + 1 }) {
                // A folder it will not list (403) cannot tell either way: the walk reports it.
                // The probe's failure is not the folder's: it fails the walk as it is.
                _ = try await writeGuard()
                let below: [RemoteEntry]
                do { below = try await children(of: folder.path) } catch {
                    return refuseInfinity("the server would not list \(folder.path) to confirm PROPFIND Depth infinity")
                }
                if !below.isEmpty {
                    return refuseInfinity("the server answered PROPFIND Depth infinity with one level only")
                }
            } else if !entries.contains(where: { $0.path.components.count > depth + 1 }) {
                return entries  // no subfolders: nothing to learn yet
            }
            depthInfinity.withLock { $0 = true }
        }
        return entries
    }

    func refuseInfinity(_ reason: String) -> [RemoteEntry]? {
        depthInfinity.withLock { $0 = false }
        logger.info("\(reason); listing folder by folder")
        return nil
    }

    /// Lists the tree below `path` with Depth 1 requests, a few folders at a time, level by
    /// level, handing each folder's entries to `visit` in the order the folders were found
    /// (the same every time, whichever answer comes first: a listing's digest depends on it).
    /// A folder that vanishes mid-walk fails the walk with `pageExpired` (list again):
    /// its parent still names it, so dropping its children would read as deletions.
    func walk(_ path: RemotePath, visit: ([RemoteEntry]) -> Void) async throws(ProviderError) -> RemoteListing {
        var result = RemoteListing(entries: [])
        var frontier = [path]
        while !frontier.isEmpty {
            let level = frontier
            frontier = []
            func take(_ listing: FolderListing) {
                switch listing {
                case .listed(let entries):
                    visit(entries)
                    // The engine's scratch folders (a bundle being written) are listed, never
                    // entered: nothing in them is an item, and they come and go mid-walk.
                    frontier.append(contentsOf: entries.filter { $0.kind == .folder && !$0.path.name.hasPrefix(BundleManifest.scratchPrefix) }.map(\.path))
                case .refused(let folder, let error):
                    result.unlisted[folder] = error
                }
            }
            do {
                try await withThrowingTaskGroup(of: (Int, FolderListing).self) { group in
                    var started = 0, taken = 0, running = 0
                    var early: [Int: FolderListing] = [:]  // answers that came before an earlier folder's
                    // At most `walkRequests` at once, and at most 64 folders beyond the oldest
                    // one not taken yet (a slow folder holds the others' answers).
                    func topUp() {
                        while running < Self.walkRequests, started < level.count, started - taken < 64 {
                            let (index, folder) = (started, level[started])
                            started += 1
                            running += 1
                            group.addTask { (index, try await self.listDuringWalk(folder, top: path)) }
                        }
                    }
                    topUp()
                    while let (index, listing) = try await group.next() {
                        running -= 1
                        early[index] = listing
                        while let next = early.removeValue(forKey: taken) {
                            take(next)
                            taken += 1
                        }
                        topUp()
                    }
                }
            } catch {
                throw WebDAVConnection.map(error, method: "PROPFIND")
            }
        }
        return result
    }

    /// How many folders a walk lists at once.
    static let walkRequests = 4

    /// One folder's listing during a walk.
    enum FolderListing: Sendable {
        case listed([RemoteEntry])
        /// The server would not list this folder (403, 5xx): what is below it is unknown.
        case refused(RemotePath, ProviderError)
    }

    /// Lists `folder` during a walk. Below the walk's top, a 403 or 5xx for one folder is
    /// that folder's (the server still answers others), so the walk goes on without it; the
    /// top itself failing, or no answer at all, fails the walk.
    func listDuringWalk(_ folder: RemotePath, top: RemotePath) async throws(ProviderError) -> FolderListing {
        let response = try await propfindResponse(folder, depth: "1", isFolder: true)
        if folder != top, Self.refusesOneFolder(response.status.code) {
            let error = response.status.providerError("PROPFIND", folder)
            return .refused(folder, ProviderError(error.code == .notAuthenticated ? .cannotSynchronize : error.code,
                                                  "the server \(response.status.code == 403 ? "refused" : "failed") to list it (HTTP \(response.status.code) \(response.status.reasonPhrase))",
                                                  underlying: error.underlying))
        }
        do { return .listed(try await children(of: folder, in: response)) } catch where error.code == .noSuchItem && folder != top {
            throw ProviderError(.pageExpired, "\(folder) changed on the server while it was listed; listing again")
        }
    }

    /// True for the answers that concern one folder: 403 (no right to list it) and 5xx
    /// (the server failed on it). A 401 is the account's, and fails the walk.
    static func refusesOneFolder(_ code: UInt) -> Bool {
        code == 403 || (500..<600).contains(code)
    }

    static let temporaryPrefix = ".tidesync-tmp-"

    /// True for our own temporary uploads, which listings never show.
    static func isTemporary(_ path: RemotePath) -> Bool {
        path.components.contains { $0.hasPrefix(temporaryPrefix) }
    }

    func absoluteURL(_ path: RemotePath, isFolder: Bool = false) -> String {
        connection.endpoint.origin + paths.requestPath(path, isFolder: isFolder)
    }
}
