import AsyncHTTPClient
import Foundation
import NIOCore
import SyncEngine
import Synchronization
import Testing
import TestSupport
@testable import WebDAV

/// The private `rclone serve webdav` of `packaging/rclone-dav.sh`, when `packaging/test.sh`
/// started one.
enum Rclone {
    /// A store on a new collection of its own, and that collection's name.
    static func store() async throws -> (WebDAVStore, String) {
        let base = TestRclone.url!
        let user = TestRclone.user, password = TestRclone.password
        let unique = "w-\(UUID().uuidString.prefix(8))"
        let root = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: base, username: user, password: password, allowInsecureHTTP: false))
        _ = try await root.makeFolder(at: RemotePath([unique]))
        await root.shutdown()
        let endpoint = try WebDAVEndpoint(baseURL: base.appendingPathComponent(unique, isDirectory: true),
                                          username: user, password: password, allowInsecureHTTP: false)
        return (WebDAVStore(endpoint: endpoint), unique)
    }

    /// Runs `body` with a store of its own collection, which is removed, and the store's
    /// client shut down, whether `body` ends or throws: a store dropped with its client
    /// running stops the whole test process (AsyncHTTPClient's assertion in debug builds).
    static func using(_ body: (WebDAVStore, String) async throws -> Void) async throws {
        let (store, unique) = try await store()
        do {
            try await body(store, unique)
        } catch {
            await remove(store)
            throw error
        }
        await remove(store)
    }

    static func remove(_ store: WebDAVStore) async {
        _ = try? await store.connection.send(store.connection.request("DELETE", path: store.paths.basePath))
        await store.shutdown()
    }
}

/// What rclone does that made `WriteGuard.locks` necessary, and that the store copes.
/// If a later rclone honours `If-Match`, the first test fails: the probe then picks
/// `conditionalHeaders` on its own, and this file and README's rclone section need a look.
@Suite("rclone serve webdav", .enabled(if: TestRclone.configured, "packaging/test.sh starts rclone when it is installed"))
struct RcloneServerTests {
    /// Sends `method` to `name` below the store's root with `headers` and `body`; the status.
    static func raw(_ store: WebDAVStore, _ method: String, _ name: String, headers: [(String, String)] = [],
                    body: String? = nil) async throws -> CollectedResponse {
        var request = store.connection.request(method, path: store.paths.requestPath(p(name)), headers: headers)
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        return try await store.connection.send(request)
    }

    static func text(_ store: WebDAVStore, _ name: String) async throws -> String {
        String(decoding: try await raw(store, "GET", name).body, as: UTF8.self)
    }

    @Test("rclone ignores If-Match and If-None-Match, honours Overwrite: F and enforces locks; the store drives it with locks")
    func serverFacts() async throws {
        try await Rclone.using { store, _ in
            let stale = [("If-Match", "\"no-such-version\"")]
            #expect(try await Self.raw(store, "PUT", "a", body: "one").status.code == 201)
            #expect(try await Self.raw(store, "PUT", "a", headers: stale, body: "two").status.code == 201)
            #expect(try await Self.text(store, "a") == "two", "PUT with a stale If-Match overwrote")
            #expect(try await Self.raw(store, "PUT", "a", headers: [("If-None-Match", "*")], body: "three").status.code == 201)
            #expect(try await Self.text(store, "a") == "three", "PUT with If-None-Match: * replaced an existing file")
            #expect(try await Self.raw(store, "MOVE", "a", headers: stale + [("Destination", store.absoluteURL(p("b"))), ("Overwrite", "F")]).status.code == 201)
            #expect(try await Self.raw(store, "DELETE", "b", headers: stale).status.code == 204, "DELETE with a stale If-Match deleted")
            _ = try await Self.raw(store, "PUT", "c", body: "c")
            _ = try await Self.raw(store, "PUT", "d", body: "d")
            #expect(try await Self.raw(store, "MOVE", "c", headers: [("Destination", store.absoluteURL(p("d"))), ("Overwrite", "F")]).status.code == 412)
            #expect(try await Self.raw(store, "COPY", "c", headers: [("Destination", store.absoluteURL(p("d"))), ("Overwrite", "F")]).status.code == 412)
            let lock = try await store.sendLock(p("c"))
            let token = try #require(lock.headers.first(name: "Lock-Token"))
            #expect(try await Self.raw(store, "PUT", "c", body: "intruder").status.code == 423)
            await store.unlock(p("c"), token: token)
            #expect(try await store.writeGuard() == .locks)
        }
    }

    @Test("a guarded write waits for another client's lock instead of slipping past it")
    func foreignLock() async throws {
        try await Rclone.using { store, _ in
            let first = try await store.upload(from: try Self.file("v1"), to: p("doc.txt"), condition: .mustNotExist, progress: nil)
            let lock = try await store.sendLock(p("doc.txt"))  // another client, mid-way through its own guarded write
            let token = try #require(lock.headers.first(name: "Lock-Token"))
            await expectCode(.locked) {
                try await store.upload(from: try Self.file("v2"), to: p("doc.txt"), condition: .mustMatch(first.etag!), progress: nil)
            }
            await expectCode(.locked) { try await store.delete(p("doc.txt"), version: first.etag) }
            #expect(try await Self.text(store, "doc.txt") == "v1")
            await store.unlock(p("doc.txt"), token: token)
            let second = try await store.upload(from: try Self.file("v2"), to: p("doc.txt"), condition: .mustMatch(first.etag!), progress: nil)
            #expect(try await Self.text(store, "doc.txt") == "v2")
            #expect(second.etag.map { !$0.sameValue(as: first.etag!) } == true)
            #expect(try await store.entry(at: p("doc.txt")).etag == second.etag, "the version returned is the one the server lists")
            #expect(try await Self.raw(store, "PUT", "doc.txt", body: "other").status.code == 201, "no lock of ours is left behind")
        }
    }

    @Test("a file's ETag changes with each write, even of the same size within a second, and survives a move of its folder")
    func etags() async throws {
        try await Rclone.using { store, _ in
            _ = try await store.makeFolder(at: p("dir"))
            var seen: [ETag] = []
            var entry = try await store.upload(from: try Self.file("save 0"), to: p("dir/f"), condition: .mustNotExist, progress: nil)
            seen.append(entry.etag!)
            for n in 1...3 {
                entry = try await store.upload(from: try Self.file("save \(n)"), to: p("dir/f"), condition: .mustMatch(entry.etag!), progress: nil)
                seen.append(entry.etag!)
            }
            #expect(Set(seen.map(\.value)).count == 4 && seen.allSatisfy { !$0.isWeak }, "\(seen)")
            _ = try await store.move(p("dir"), to: p("moved"), version: nil)
            #expect(try await store.entry(at: p("moved/f")).etag == entry.etag)
        }
    }

    /// The folder is made again at once (as nginx does when something is moved into it):
    /// its being there says nothing about where the temporary went.
    @Test("an upload whose folder another client moves in the middle of its PUT leaves no temporary on the server")
    func folderMovedMidUpload() async throws {
        try await Rclone.using { store, unique in
            _ = try await store.makeFolder(at: p("f"))
            let folder = TestRclone.diskRoot! + "/" + unique
            let source = URL(fileURLWithPath: temporaryPath("tidesync-rclone-"))
            try Data(repeating: 7, count: 4 << 20).write(to: source)
            let destination = store.absoluteURL(p("g"), isFolder: true)
            let origin = store.absoluteURL(p("f"), isFolder: true)
            let moved = Mutex<Int32?>(nil)
            // Past the first chunk, once rclone has made the temporary in f, f is moved to g by
            // another client (curl); rclone lets it, and writes the rest of the PUT into g.
            let progress: TransferProgress = { done, _ in
                guard done > 256 << 10, moved.withLock({ $0 }) == nil else { return }
                let deadline = ContinuousClock.now + .seconds(30)
                while ContinuousClock.now < deadline, !((try? FileManager.default.contentsOfDirectory(atPath: folder + "/f")) ?? [])
                        .contains(where: { $0.hasPrefix(WebDAVStore.temporaryPrefix) }) {
                    usleep(10_000)
                }
                let account = "\(TestRclone.user ?? ""):\(TestRclone.password ?? "")"
                let status = runTool("curl", ["-sf", "-o", "/dev/null", "-u", account, "-X", "MOVE", "-H", "Destination: \(destination)", origin])
                let remade = runTool("curl", ["-sf", "-o", "/dev/null", "-u", account, "-X", "MKCOL", origin])
                moved.withLock { $0 = status == 0 ? remade : status }
            }
            await #expect(throws: ProviderError.self) {
                _ = try await store.upload(from: source, to: p("f/doc"), condition: .mustNotExist, progress: progress)
            }
            #expect(moved.withLock { $0 } == 0, "curl MOVE f g, then MKCOL f")
            var left: [String] = []
            FileTree.walk(folder) { if $0.name.hasPrefix(WebDAVStore.temporaryPrefix) { left.append($0.relative) } }
            #expect(left.isEmpty, "temporaries left on the server: \(left)")
            try? FileManager.default.removeItem(at: source)
        }
    }

    static func file(_ text: String) throws -> URL {
        let url = URL(fileURLWithPath: temporaryPath("tidesync-rclone-"))
        try Data(text.utf8).write(to: url)
        return url
    }
}
