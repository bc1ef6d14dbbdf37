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
/// that second. Call `shutdown()` when done.
public final class WebDAVStore: RemoteStore {
    let connection: WebDAVConnection
    let paths: WebDAVPath
    let logger: Logger
    /// Nil until the first recursive listing; false once the server refused Depth infinity.
    let depthInfinity = Mutex<Bool?>(nil)
    /// How often a 412 on an unchanged version is retried, and after how long.
    static let weakETagRetries = 4
    static let weakETagDelay = Duration.milliseconds(1100)

    /// A store on `endpoint`, with up to `connections` kept-alive connections.
    public init(endpoint: WebDAVEndpoint, connections: Int = 8, logger: Logger = Logger(label: "tidesync.webdav")) {
        connection = WebDAVConnection(endpoint: endpoint, connections: connections)
        paths = WebDAVPath(basePath: endpoint.baseURL.path.isEmpty ? "/" : endpoint.baseURL.path)
        self.logger = logger
    }

    /// Closes the connections. The store must not be used afterwards.
    public func shutdown() async { await connection.shutdown() }

    static let propfindBody = """
        <?xml version="1.0" encoding="utf-8"?>
        <d:propfind xmlns:d="DAV:" xmlns:oc="\(MultistatusParser.ownCloudNamespace)" xmlns:ts="\(MultistatusParser.tidesyncNamespace)">
        <d:prop><d:resourcetype/><d:getcontentlength/><d:getetag/><d:getlastmodified/><oc:fileid/><ts:symlink-target/></d:prop>
        </d:propfind>
        """

    /// PROPFIND `path` at `depth`; returns the entries the answer names, keyed by path.
    func propfind(_ path: RemotePath, depth: String, isFolder: Bool) async throws(ProviderError) -> [RemoteEntry] {
        var request = connection.request("PROPFIND", path: paths.requestPath(path, isFolder: isFolder),
                                         headers: [("Depth", depth), ("Content-Type", "application/xml; charset=utf-8")])
        request.body = .bytes(ByteBuffer(string: Self.propfindBody))
        let response = try await connection.send(request)
        if response.status.code == 301 || response.status.code == 308, !isFolder {
            return try await propfind(path, depth: depth, isFolder: true)
        }
        guard response.status.code == 207 else {
            throw response.status.providerError("PROPFIND", path, location: response.headers.first(name: "Location"))
        }
        var seen = Set<RemotePath>()
        return try MultistatusParser.parse(response.body).compactMap { response in
            guard let entry = entry(from: response), seen.insert(entry.path).inserted else { return nil }
            return entry
        }
    }

    func entry(from response: MultistatusResponse) -> RemoteEntry? {
        guard let path = paths.remotePath(href: response.href) else {
            logger.warning("ignoring an entry the server listed outside the sync folder or with an unusable name",
                           metadata: ["href": "\(response.href.prefix(300))"])
            return nil
        }
        let kind: ItemKind = response.isCollection ? .folder : (response.symlinkTarget != nil ? .symlink : .file)
        return RemoteEntry(path: path, kind: kind, size: kind == .folder ? 0 : max(0, response.contentLength ?? 0),
                           etag: response.etag.flatMap(ETag.init(header:)), fileID: response.fileID,
                           modificationDate: response.lastModified.flatMap(Self.parseHTTPDate),
                           symlinkTarget: kind == .symlink ? response.symlinkTarget : nil)
    }

    static func parseHTTPDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }

    public func entry(at path: RemotePath) async throws(ProviderError) -> RemoteEntry {
        let entries = try await propfind(path, depth: "0", isFolder: path.isRoot)
        guard let entry = entries.first(where: { $0.path == path }) else {
            throw ProviderError(.cannotSynchronize, "the server's answer for \(path) did not describe it")
        }
        return entry
    }

    public func children(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry] {
        let entries = try await propfind(path, depth: "1", isFolder: true)
        return entries.filter { $0.path.parent == path && $0.path != path && !Self.isTemporary($0.path) }
    }

    public func descendants(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry] {
        if depthInfinity.withLock({ $0 }) != false {
            do {
                let entries = try await propfind(path, depth: "infinity", isFolder: true)
                depthInfinity.withLock { $0 = true }
                return entries.filter { $0.path != path && $0.path.isDescendant(of: path) && !Self.isTemporary($0.path) }
            } catch where error.code == .notAuthenticated && depthInfinity.withLock({ $0 }) == nil {
                // Apache answers 403 to Depth infinity unless DavDepthInfinity is on; a real
                // auth failure shows again on the Depth 1 walk below.
                depthInfinity.withLock { $0 = false }
                logger.info("the server refuses PROPFIND Depth infinity; walking folder by folder")
            }
        }
        return try await walk(path)
    }

    /// Lists the tree below `path` with Depth 1 requests, a few folders at a time.
    func walk(_ path: RemotePath) async throws(ProviderError) -> [RemoteEntry] {
        var result: [RemoteEntry] = []
        var frontier = [path]
        while !frontier.isEmpty {
            let level = frontier
            frontier = []
            let listings: [[RemoteEntry]]
            do {
                listings = try await withThrowingTaskGroup(of: [RemoteEntry].self) { group in
                    var collected: [[RemoteEntry]] = []
                    var iterator = level.makeIterator()
                    for _ in 0..<4 { if let folder = iterator.next() { group.addTask { try await self.childrenIfPresent(folder) } } }
                    while let listing = try await group.next() {
                        collected.append(listing)
                        if let folder = iterator.next() { group.addTask { try await self.childrenIfPresent(folder) } }
                    }
                    return collected
                }
            } catch {
                throw WebDAVConnection.map(error, method: "PROPFIND")
            }
            for listing in listings {
                result.append(contentsOf: listing)
                frontier.append(contentsOf: listing.filter { $0.kind == .folder }.map(\.path))
            }
        }
        return result
    }

    /// The children of `folder`, or none when it vanished during the walk.
    func childrenIfPresent(_ folder: RemotePath) async throws(ProviderError) -> [RemoteEntry] {
        do { return try await children(of: folder) } catch where error.code == .noSuchItem && !folder.isRoot { return [] }
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
