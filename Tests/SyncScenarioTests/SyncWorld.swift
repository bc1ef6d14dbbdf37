import Foundation
import LocalStore
import Logging
import Replica
import StateDatabase
import SyncEngine
import Testing
import TestSupport
import WebDAV

#if canImport(Glibc)
import Glibc
#endif

/// The stores the scenarios run against: the local-directory store always, the private
/// Apache of `packaging/test.sh` when it runs (`available`), and nginx, lighttpd, WsgiDAV
/// and rclone when test.sh started them (`withOtherServers`). Every scenario runs over
/// `withOtherServers` (issue 18); what a server cannot do is a filter or an expectation of
/// its own at the test, with the README's compatibility notes saying why. The live loops
/// (watcher tests) take turns through `TestSlots.liveLoops`.
enum Remote: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case localDirectory
    case apache
    case nginx
    case lighttpd
    case wsgidav
    case rclone

    var testDescription: String { rawValue }

    static var available: [Remote] { TestApache.depthInfinityConfigured ? [.localDirectory, .apache] : [.localDirectory] }

    /// `available` and the other servers that run.
    static var withOtherServers: [Remote] {
        available + [Remote.nginx, .lighttpd, .wsgidav, .rclone].filter { $0.server?.configured == true }
    }

    /// False where the server keeps no WebDAV dead properties (nginx: PROPPATCH 405,
    /// rclone: 403), so a symlink cannot be marked as one there: tidesync refuses to sync it.
    var storesSymlinks: Bool { self != .nginx && self != .rclone }

    /// True where a file's version is its modification time in seconds and its size
    /// (nginx; WsgiDAV, whose ETag adds only the inode its in-place PUT keeps): a second
    /// write of the same size within a second is no new version there (README, compatibility).
    var versionsAreSecondsAndSize: Bool { self == .nginx || self == .wsgidav }

    /// The longest name, in bytes, the server stores: lighttpd writes a PUT to a temporary
    /// name beside the target first, so a longer name is answered 500 (README,
    /// compatibility; 245 bytes passed the contract test and failed a sync scenario).
    var longestName: Int { self == .lighttpd ? 240 : 255 }

    /// The server of nginx, lighttpd, WsgiDAV and rclone.
    var server: TestDAVServer? {
        switch self {
        case .nginx: .nginx
        case .lighttpd: .lighttpd
        case .wsgidav: .wsgidav
        case .rclone: .rclone
        case .localDirectory, .apache: nil
        }
    }

    /// The base URL new collections are made in (the WebDAV remotes).
    var baseURL: URL { server?.url ?? TestApache.depthInfinityURL! }
    /// The folder on this machine the base URL serves.
    var diskRoot: String { server?.diskRoot ?? TestApache.depthInfinityDiskRoot! }

    /// An endpoint at `base` on this remote's server with its test account.
    func endpoint(_ base: URL) throws -> WebDAVEndpoint {
        guard let server else { return try TestApache.endpoint(base) }
        return try WebDAVEndpoint(baseURL: base, username: server.user ?? "", password: server.password ?? "", allowInsecureHTTP: false)
    }
}

extension TestApache {
    /// An endpoint at `base` on the private Apache with the test account.
    static func endpoint(_ base: URL) throws -> WebDAVEndpoint {
        try WebDAVEndpoint(baseURL: base, username: user ?? "", password: password ?? "", allowInsecureHTTP: false)
    }

    /// Runs `body` with a store on a new collection below `base` (served from `diskRoot`)
    /// and the collection's folder on disk; the collection goes afterwards, also on a throw.
    static func withCollection(below base: URL, diskRoot: String, connections: Int = 4,
                               _ body: (WebDAVStore, String) async throws -> Void) async throws {
        let name = "c-\(UUID().uuidString.prefix(8))"
        let root = WebDAVStore(endpoint: try endpoint(base), connections: 1)
        _ = try await root.makeFolder(at: RemotePath([name]))
        let store = WebDAVStore(endpoint: try endpoint(base.appendingPathComponent(name, isDirectory: true)), connections: connections)
        func remove() async {
            await store.shutdown()
            try? await root.delete(RemotePath([name]), version: nil)
            await root.shutdown()
        }
        do { try await body(store, diskRoot + "/" + name) } catch {
            await remove()
            throw error
        }
        await remove()
    }
}

/// One sync domain for a scenario, in the shape of Nextcloud's FakeFolder: a local folder,
/// a fresh remote (a temp directory, or a new collection on Apache), a state DB file, and
/// the real engine and replica between them. Change a side, `sync()`, check both sides and
/// the DB agree with `expectAgreement()`.
final class SyncWorld: @unchecked Sendable {
    let remote: Remote
    let scratch: String
    let localRoot: String
    /// Where the remote's files are on disk (the server's disk for Apache).
    let remoteDisk: String
    let store: any RemoteStore
    let database: StateDatabase
    let provider: SyncProvider
    private(set) var pass: SyncPass
    private let collection: String?
    private let webDAV: WebDAVStore?

    init(_ remote: Remote, transfers: Int = 4) async throws {
        self.remote = remote
        let unique = "s-\(UUID().uuidString.prefix(8))"
        scratch = NSTemporaryDirectory() + "tidesync-scenario-" + unique
        localRoot = scratch + "/local"
        try FileManager.default.createDirectory(atPath: localRoot, withIntermediateDirectories: true)
        switch remote {
        case .localDirectory:
            remoteDisk = scratch + "/remote"
            try FileManager.default.createDirectory(atPath: remoteDisk, withIntermediateDirectories: true)
            store = LocalDirectoryStore(root: remoteDisk)
            webDAV = nil
            collection = nil
        case .apache, .nginx, .lighttpd, .wsgidav, .rclone:
            let root = WebDAVStore(endpoint: try remote.endpoint(remote.baseURL), connections: 1)
            do { _ = try await root.makeFolder(at: RemotePath([unique])) } catch {
                await root.shutdown()  // a client dropped unshut stops the whole test process
                throw error
            }
            await root.shutdown()
            let store = WebDAVStore(endpoint: try remote.endpoint(remote.baseURL.appendingPathComponent(unique, isDirectory: true)),
                                    connections: 2 * transfers)
            self.store = store
            webDAV = store
            collection = unique
            remoteDisk = remote.diskRoot + "/" + unique
        }
        database = try StateDatabase(path: scratch + "/state.sqlite")
        provider = SyncProvider(store: store, state: database)
        pass = Self.makePass(store: store, database: database, localRoot: localRoot, transfers: transfers, host: "testhost")
    }

    /// A pass of a client syncing `store` into `localRoot`, with `database` as its state DB.
    static func makePass(store: any RemoteStore, database: StateDatabase, localRoot: String, transfers: Int = 4,
                         bundles: BundleRule = .standard, massDelete: MassDeleteGuard? = nil, host: String) -> SyncPass {
        var logger = Logger(label: "scenario-\(host)")
        logger.logLevel = ProcessInfo.processInfo.environment["TIDESYNC_TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        let exclude = ExcludeList(patterns: ExcludeList.defaultPatterns)
        let provider = SyncProvider(store: store, state: database, bundles: bundles)
        let runner = PlanRunner(provider: provider, folder: LocalFolder(root: localRoot, bundles: bundles),
                                transfers: transfers, logger: logger)
        return SyncPass(runner: runner, scanner: LocalScanner(root: localRoot, exclude: exclude, bundles: bundles),
                        host: host, massDelete: massDelete, logger: logger)
    }

    /// From now on this world's passes use `bundles` (as after a change of `bundle_extensions`).
    func use(bundles: BundleRule) {
        pass = Self.makePass(store: store, database: database, localRoot: localRoot, bundles: bundles, host: "testhost")
    }

    /// A second machine syncing the same remote: its own folder and state DB, host `host`.
    func otherClient(host: String = "otherhost") throws -> (localRoot: String, database: StateDatabase, pass: SyncPass) {
        let root = scratch + "/local-" + host
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let database = try StateDatabase(path: scratch + "/state-\(host).sqlite")
        return (root, database, Self.makePass(store: store, database: database, localRoot: root, host: host))
    }

    func close() async {
        await webDAV?.shutdown()
        if let collection, let endpoint = try? remote.endpoint(remote.baseURL) {
            let root = WebDAVStore(endpoint: endpoint, connections: 1)
            try? await root.delete(RemotePath([collection]), version: nil)
            await root.shutdown()
        }
        try? FileManager.default.removeItem(atPath: scratch)
    }

    // MARK: Changing a side

    func local(_ relative: String) -> String { localRoot + "/" + relative }
    func onServer(_ relative: String) -> String { remoteDisk + "/" + relative }

    /// Writes `text` to the local file (creating folders).
    func write(_ relative: String, _ text: String) throws { try writeFile(local(relative), text) }

    /// Writes `text` straight to the remote's disk (as another client or the server's own
    /// tools would), owned by the server's user. On rclone, through the server (see
    /// `throughRclone`).
    func writeOnServer(_ relative: String, _ text: String) throws { try writeOnServer(relative, data: Data(text.utf8)) }

    /// Writes `data` on the remote's disk as `writeOnServer(_:_:)` writes text.
    func writeOnServer(_ relative: String, data: Data) throws {
        guard remote != .rclone else {
            let parts = relative.split(separator: "/").map(String.init)
            for depth in parts.indices.dropLast() { try throughRclone("MKCOL", parts[...depth].joined(separator: "/"), existingIsFine: true) }
            let body = scratch + "/put-\(UUID().uuidString.prefix(8))"
            try data.write(to: URL(fileURLWithPath: body))
            defer { unlink(body) }
            return try throughRclone("PUT", relative, body: body)
        }
        try FileManager.default.createDirectory(atPath: (onServer(relative) as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try data.write(to: URL(fileURLWithPath: onServer(relative)))
        giveToServer(relative)
    }

    func makeServerFolder(_ relative: String) throws {
        guard remote != .rclone else {
            let parts = relative.split(separator: "/").map(String.init)
            for depth in parts.indices { try throughRclone("MKCOL", parts[...depth].joined(separator: "/"), existingIsFine: true) }
            return
        }
        try FileManager.default.createDirectory(atPath: onServer(relative), withIntermediateDirectories: true)
        giveToServer(relative)
    }

    /// Deletes the file or folder on the remote's disk (on rclone, through the server).
    func removeOnServer(_ relative: String) throws {
        guard remote != .rclone else { return try throughRclone("DELETE", relative) }
        try FileManager.default.removeItem(atPath: onServer(relative))
    }

    /// Renames `relative` to `destination` on the remote's disk (on rclone, a MOVE through
    /// the server): another client's move.
    func moveOnServer(_ relative: String, to destination: String) throws {
        guard remote != .rclone else {
            let url = remote.baseURL.absoluteString + (collection ?? "") + "/" + Self.encoded(destination)
            return try throughRclone("MOVE", relative, headers: ["Destination: \(url)", "Overwrite: F"])
        }
        guard rename(onServer(relative), onServer(destination)) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    private static func encoded(_ relative: String) -> String {
        relative.split(separator: "/").map { String($0).addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? String($0) }
            .joined(separator: "/")
    }

    /// Another client's request to the private rclone, with curl. rclone serves its disk
    /// through a listing cache (`--dir-cache-time 2s`, `packaging/rclone-dav.sh`): a change
    /// made on the disk behind its back is seen by no client for up to 2 s, so the scenarios
    /// change rclone's side through rclone, as other clients do.
    private func throughRclone(_ method: String, _ relative: String, body: String? = nil, headers: [String] = [],
                               existingIsFine: Bool = false) throws {
        let server = TestDAVServer.rclone
        let url = remote.baseURL.absoluteString + (collection ?? "") + "/" + Self.encoded(relative)
        var arguments = ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-u", "\(server.user ?? ""):\(server.password ?? "")", "-X", method]
        if let body { arguments += ["-T", body] }
        for header in headers { arguments += ["-H", header] }
        let (status, output, errors) = try ChildProcess.collect("/usr/bin/curl", arguments + [url])
        let code = Int(String(decoding: output, as: UTF8.self)) ?? 0
        guard status == 0, (200..<300).contains(code) || (existingIsFine && code == 405) else {
            throw POSIXError(.EIO, userInfo: [NSLocalizedDescriptionKey: "\(method) \(url) answered \(code): \(String(decoding: errors, as: UTF8.self))"])
        }
    }

    /// Waits until the server serves `relative` as `text`: lighttpd serves a file changed
    /// behind its back (on its disk) at its old length for about a second. At once elsewhere.
    func waitUntilServed(_ relative: String, _ text: String) async throws {
        guard remote == .lighttpd, let server = remote.server else { return }
        let url = remote.baseURL.absoluteString + (collection ?? "") + "/" + Self.encoded(relative)
        try await eventually("lighttpd serving \(relative) as written", timeout: .seconds(20)) {
            let (status, output, _) = try ChildProcess.collect("/usr/bin/curl", ["-sS", "-u", "\(server.user ?? ""):\(server.password ?? "")", url])
            return status == 0 && String(decoding: output, as: UTF8.self) == text
        }
    }

    /// Chowns what a root test made on Apache's disk (and the folders above it) to Apache's user.
    func giveToServer(_ relative: String) {
        guard remote == .apache, getuid() == 0, let owner = TestApache.owner else { return }
        var parts = relative.split(separator: "/").map(String.init)
        while !parts.isEmpty {
            try? FileManager.default.setAttributes([.ownerAccountName: owner, .groupOwnerAccountName: owner],
                                                   ofItemAtPath: onServer(parts.joined(separator: "/")))
            parts.removeLast()
        }
    }

    // MARK: Syncing and checking

    /// Runs passes until one has nothing to do; fails the test if a step failed or it takes
    /// more than `maxPasses`. Returns the passes that did something.
    @discardableResult
    func sync(maxPasses: Int = 4, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [PassResult] {
        var results: [PassResult] = []
        var counted = 0
        // How long passes that only found the server still changing are tried again.
        let changing = ContinuousClock.now + .seconds(10)
        while counted < maxPasses {
            let result = try await pass.run()
            for failure in result.report.failed {
                Issue.record("step at \(failure.path) failed: \(failure.error)", sourceLocation: sourceLocation)
            }
            if let parked = result.report.parked { Issue.record("domain parked: \(parked)", sourceLocation: sourceLocation) }
            // A file held back (some process had it open for writing, such as a child another
            // test forked at that moment) is not agreement yet: the daemon looks again.
            if result.steps == 0 && result.heldBack.isEmpty { return results }
            results.append(result)
            // A pass that got nowhere because the server's answers disagree with its listing
            // (lighttpd serves a file changed behind its back at its old length for about a
            // second: README, compatibility) is tried again in a moment without counting, as
            // the daemon's loop follows such a pass up (`DomainLoop`).
            if result.report.succeeded == 0, result.report.resolved > 0, ContinuousClock.now < changing {
                try await Task.sleep(for: .milliseconds(250))
                continue
            }
            counted += 1
        }
        Issue.record("no agreement after \(maxPasses) passes", sourceLocation: sourceLocation)
        return results
    }

    /// What a tree holds: kind and bytes (files) or target (symlinks) by relative path.
    enum Node: Equatable, CustomStringConvertible {
        case folder, file(String), symlink(String)
        var description: String {
            switch self {
            case .folder: "folder"
            case .file(let text): "file(\(text.prefix(40)))"
            case .symlink(let target): "symlink(\(target))"
            }
        }
    }

    /// The tree below `root`, without tidesync's own lock file. Temporaries are kept, so a
    /// leftover shows up as a difference.
    static func tree(_ root: String) -> [String: Node] {
        var result: [String: Node] = [:]
        FileTree.walk(root, leaveOut: { $0 == ".tidesync-store.lock" }) { entry in
            switch entry.type {
            case S_IFDIR: result[entry.relative] = .folder
            case S_IFLNK: result[entry.relative] = .symlink((try? FileManager.default.destinationOfSymbolicLink(atPath: entry.absolute)) ?? "?")
            default: result[entry.relative] = .file(readFile(entry.absolute) ?? "")
            }
        }
        return result
    }

    /// The remote tree as the store lists it (symlinks as symlinks on every store), with
    /// file contents read from the server's disk.
    func remoteTree() async throws -> [String: Node] {
        var result: [String: Node] = [:]
        for entry in try await store.descendants(of: .root) {
            switch entry.kind {
            case .folder, .bundle: result[entry.path.description] = .folder
            case .symlink: result[entry.path.description] = .symlink(entry.symlinkTarget ?? "?")
            case .file: result[entry.path.description] = .file(readFile(onServer(entry.path.description)) ?? "")
            }
        }
        return result
    }

    /// Both sides hold the same tree, nothing else is on the server's disk (no temporary
    /// or partial file), and the state DB has a row for every item whose recorded local stat
    /// is the one on disk.
    func expectAgreement(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let local = Self.tree(localRoot)
        let remote = try await remoteTree()
        #expect(local == remote, "local \(local.count) items vs remote \(remote.count)", sourceLocation: sourceLocation)
        if local != remote {
            let keys = FileTree.differingPaths(local, remote).prefix(10)
            for key in keys { Issue.record("\(key): local \(local[key].map(\.description) ?? "-") remote \(remote[key].map(\.description) ?? "-")", sourceLocation: sourceLocation) }
        }
        // Apache keeps dead properties (a symlink's target) in .DAV folders of its own.
        let onDisk = Self.tree(remoteDisk).keys.filter { !remote.keys.contains($0) && !$0.split(separator: "/").contains(".DAV") }
        #expect(onDisk.isEmpty, "left on the server's disk: \(onDisk.sorted())", sourceLocation: sourceLocation)
        let recorded = Reconciler.paths(of: try database.allItems())
        for (path, node) in local where BundleRule.standard.enclosingBundle(of: try RemotePath(string: path)) == nil {
            guard let record = recorded[try RemotePath(string: path)] else {
                Issue.record("no state DB row for \(path)", sourceLocation: sourceLocation)
                continue
            }
            let entry = LocalScanner.entry(at: self.local(path), path: try RemotePath(string: path))
            if case .file = node { #expect(record.local == entry?.stat, "stale local stat for \(path)", sourceLocation: sourceLocation) }
            #expect(record.remoteETag != nil || record.kind == .folder, "no remote version for \(path)", sourceLocation: sourceLocation)
        }
        #expect(try database.pendingOperations().isEmpty, "journal not empty", sourceLocation: sourceLocation)
    }

    /// The inode of a file on the remote's disk (a move keeps it; a re-upload does not).
    func serverInode(_ relative: String) -> UInt64? {
        var st = stat()
        return lstat(onServer(relative), &st) == 0 ? UInt64(st.st_ino) : nil
    }

    /// Waits until the clock is past the second of the modification time `relative` has on
    /// the server's disk: a write from now on has a later time there.
    func waitPastServerSecond(_ relative: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        var st = stat()
        guard lstat(onServer(relative), &st) == 0 else { return }
        let second = st.st_mtim.tv_sec
        try await eventually("a second past the server's write", timeout: .seconds(5), every: .milliseconds(20),
                              sourceLocation: sourceLocation) { time(nil) > second }
    }

    func localInode(_ relative: String) -> UInt64? {
        var st = stat()
        return lstat(local(relative), &st) == 0 ? UInt64(st.st_ino) : nil
    }
}

/// Runs `body` with a fresh world and always cleans up.
func withWorld(_ remote: Remote, transfers: Int = 4, _ body: (SyncWorld) async throws -> Void) async throws {
    let world = try await SyncWorld(remote, transfers: transfers)
    do {
        try await body(world)
    } catch {
        await world.close()
        throw error
    }
    await world.close()
}
