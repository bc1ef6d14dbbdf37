import Foundation
import LocalStore
import SyncEngine
import Testing
import TestSupport
import WebDAV

/// The implementations the contract suite runs over.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case localDirectory
    case inMemory
    /// Apache mod_dav with `DavDepthInfinity Off` (the default): listings walk.
    case apache
    /// Apache mod_dav with `DavDepthInfinity On`: one request lists a tree.
    case apacheDepthInfinity
    /// `rclone serve webdav` of a local directory (see `packaging/rclone-dav.sh`): a
    /// server that ignores `If-Match`/`If-None-Match`, so tidesync guards writes with locks.
    case rclone
    /// nginx with `libnginx-mod-http-dav-ext` (`packaging/nginx-dav.sh`): lists no ETag and
    /// ignores `If-Match`, so versions are made from time and size and writes use locks.
    case nginx
    /// lighttpd with mod_webdav (`packaging/lighttpd-dav.sh`): honours `If-Match`.
    case lighttpd
    /// WsgiDAV (`packaging/wsgidav-dav.sh`): honours `If-Match` over existing files, writes
    /// a PUT in place, so writes use locks and uploads are moved into place.
    case wsgidav

    var testDescription: String { rawValue }

    /// The server of the kinds started by their own script, nil for the others.
    var server: TestDAVServer? {
        switch self {
        case .nginx: .nginx
        case .lighttpd: .lighttpd
        case .wsgidav: .wsgidav
        default: nil
        }
    }

    /// Every kind whose backing server is available in this run.
    static var available: [StoreKind] {
        allCases.filter { kind in
            switch kind {
            case .localDirectory, .inMemory: true
            case .apache, .apacheDepthInfinity: TestApache.configured
            case .rclone: TestRclone.configured
            case .nginx, .lighttpd, .wsgidav: kind.server!.configured
            }
        }
    }

    /// False for the servers that keep no dead properties (PROPPATCH refused), where
    /// tidesync cannot store a symlink: rclone and nginx.
    var keepsDeadProperties: Bool { self != .rclone && self != .nginx }

    /// The longest name, in bytes, the server stores: lighttpd writes a PUT to the name
    /// plus a 10-byte suffix first, so it answers 500 for names above 245 bytes.
    var longestName: Int { self == .lighttpd ? 245 : 255 }

    /// True for nginx, whose MOVE makes a missing destination folder instead of answering 409.
    var movesIntoMissingFolders: Bool { self == .nginx }

    /// True for the kinds that are a WebDAV server.
    var isWebDAV: Bool { self != .localDirectory && self != .inMemory }
}

extension StoreKind {
    /// The base URL of this kind's server (the WebDAV kinds only).
    var baseURL: URL {
        switch self {
        case .rclone: TestRclone.url!
        case .apache: TestApache.url!
        case .nginx, .lighttpd, .wsgidav: server!.url!
        default: TestApache.depthInfinityURL!
        }
    }

    /// The folder on this machine that this kind's server serves (the WebDAV kinds only).
    var diskRoot: String {
        switch self {
        case .rclone: TestRclone.diskRoot!
        case .apache: TestApache.diskRoot!
        case .nginx, .lighttpd, .wsgidav: server!.diskRoot!
        default: TestApache.depthInfinityDiskRoot!
        }
    }

    /// The test account on this kind's server (the WebDAV kinds only).
    var credentials: (user: String, password: String) {
        switch self {
        case .rclone: (TestRclone.user ?? "", TestRclone.password ?? "")
        case .nginx, .lighttpd, .wsgidav: (server!.user ?? "", server!.password ?? "")
        default: (TestApache.user ?? "", TestApache.password ?? "")
        }
    }
}

/// A fresh, empty store for one test: a temp directory, or a new collection on the
/// private Apache. `close()` removes what the test made.
struct StoreFixture {
    let kind: StoreKind
    let store: any RemoteStore
    /// Where the store's files are on disk (the server's disk for Apache).
    let diskPath: String
    /// A scratch directory for local files.
    let scratch: URL
    private let webDAV: WebDAVStore?
    /// The collection this fixture made on the server, removed by `close()`.
    private let collection: (base: URL, name: String)?
    private let user: String
    private let password: String

    init(_ kind: StoreKind) async throws {
        self.kind = kind
        let unique = "t-\(UUID().uuidString.prefix(8))"
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("tidesync-contract-\(unique)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        (user, password) = kind.isWebDAV ? kind.credentials : ("", "")
        switch kind {
        case .localDirectory:
            diskPath = scratch.appendingPathComponent("store").path
            try FileManager.default.createDirectory(atPath: diskPath, withIntermediateDirectories: true)
            store = LocalDirectoryStore(root: diskPath)
            webDAV = nil
            collection = nil
        case .inMemory: diskPath = scratch.path; store = InMemoryRemoteStore(); webDAV = nil; collection = nil
        default:
            let base = kind.baseURL
            let root = try WebDAVEndpoint(baseURL: base, username: user, password: password, allowInsecureHTTP: false)
            let rootStore = WebDAVStore(endpoint: root, connections: 2)
            do { _ = try await rootStore.makeFolder(at: RemotePath([unique])) } catch {
                await rootStore.shutdown()  // a client dropped unshut stops the whole test process
                throw error
            }
            await rootStore.shutdown()
            let endpoint = try WebDAVEndpoint(baseURL: base.appendingPathComponent(unique, isDirectory: true),
                                              username: user, password: password, allowInsecureHTTP: false)
            let store = WebDAVStore(endpoint: endpoint, connections: 8)
            self.store = store
            webDAV = store
            collection = (base, unique)
            diskPath = kind.diskRoot + "/" + unique
        }
    }

    func close() async {
        await webDAV?.shutdown()
        if let collection, let endpoint = try? WebDAVEndpoint(baseURL: collection.base, username: user,
                                                              password: password, allowInsecureHTTP: false) {
            let root = WebDAVStore(endpoint: endpoint, connections: 1)
            try? await root.delete(RemotePath([collection.name]), version: nil)
            await root.shutdown()
        }
        try? FileManager.default.removeItem(at: scratch)
    }

    /// Another client of the same store: its own connections to the same collection (for
    /// a WebDAV server), its own store object on the same folder, or the same in-memory
    /// store. Shut down by `close(client:)`.
    func otherClient() throws -> any RemoteStore {
        switch kind {
        case .localDirectory: return LocalDirectoryStore(root: diskPath)
        case .inMemory: return store
        default:
            let base = kind.baseURL
            let endpoint = try WebDAVEndpoint(baseURL: base.appendingPathComponent(collection!.name, isDirectory: true),
                                              username: user, password: password, allowInsecureHTTP: false)
            return WebDAVStore(endpoint: endpoint, connections: 8)
        }
    }

    /// Another client on this fixture's collection of a WebDAV kind, whose write-guard
    /// probe names its files after `probeOwner`. Shut down by `close(client:)`.
    func webDAVClient(probeOwner: String) throws -> WebDAVStore {
        let endpoint = try WebDAVEndpoint(baseURL: kind.baseURL.appendingPathComponent(collection!.name, isDirectory: true),
                                          username: user, password: password, allowInsecureHTTP: false)
        return WebDAVStore(endpoint: endpoint, connections: 8, probeOwner: probeOwner)
    }

    /// Shuts down a store `otherClient()` made.
    func close(client: any RemoteStore) async {
        if let client = client as? WebDAVStore, client !== webDAV { await client.shutdown() }
    }

    /// Writes `contents` to a new scratch file and returns its URL.
    func localFile(_ contents: String, name: String = UUID().uuidString) throws -> URL {
        let url = scratch.appendingPathComponent(name)
        try Data(contents.utf8).write(to: url)
        return url
    }

    /// Downloads the whole file at `path` and returns its text.
    func read(_ path: RemotePath) async throws -> String {
        let target = scratch.appendingPathComponent(UUID().uuidString)
        _ = try await store.download(path, range: nil, version: nil, to: target, progress: nil)
        return String(decoding: try Data(contentsOf: target), as: UTF8.self)
    }

    /// Uploads `contents` as a new file at `path`.
    @discardableResult
    func put(_ path: RemotePath, _ contents: String) async throws -> RemoteEntry {
        try await store.upload(from: localFile(contents), to: path, condition: .mustNotExist, progress: nil)
    }
}

/// Runs `body` with a fresh fixture and always cleans up.
func withStore(_ kind: StoreKind, _ body: (StoreFixture) async throws -> Void) async throws {
    let fixture = try await StoreFixture(kind)
    do {
        try await body(fixture)
    } catch {
        await fixture.close()
        throw error
    }
    await fixture.close()
}

/// `p("a/b")`: a RemotePath literal for tests.
func p(_ text: String) -> RemotePath { try! RemotePath(string: text) }
