import Foundation
import Synchronization
import SyncEngine
import Testing
import TestSupport
@testable import WebDAV

/// The in-place check of the write-guard probe: a held PUT in which nothing changed proves
/// nothing, however quickly the server answered (a busy server that writes in place may not
/// have begun reading it: WsgiDAV beside heavy disk writes was taken for atomic that way),
/// so only the decisive check's large PUT proves "atomic".
@Suite("the probe's in-place check")
struct SlowPutProbeTests {
    /// A server that honours If-Match and If-None-Match, has no LOCK (unless `locks`),
    /// answers every request as soon as it has read it, and lists the scratch file with the
    /// size `listedSize` gives (how many bytes of a body it is reading now it has read, and the
    /// size its last PUT left).
    static func server(refusedBodiesOver: Int = .max, name: String = "FakeDAV/1.0", locks: Bool = false,
                       listedSize: @escaping @Sendable (_ reading: Int, _ size: Int) -> Int) throws -> FakeDAVServer {
        let state = Mutex((size: 0, bodyBytes: 0))
        let holder = Mutex<FakeDAVServer?>(nil)
        let server = try FakeDAVServer(refusedBodiesOver: refusedBodiesOver, serverName: name) { request in
            // Every body read whole so far: more than that read is a body arriving now. (A
            // body cut short is never handled here: after one, every request looks "reading";
            // only the decisive check cuts one, and it is the last PUT of a probe.)
            let length = Int(request.headers["content-length"] ?? "0") ?? 0
            state.withLock { $0.bodyBytes += length }
            switch request.method {
            case "PUT" where request.headers["if-match"] != nil || request.headers["if-none-match"] != nil:
                return .init(status: 412)
            case "PUT":
                state.withLock { $0.size = length }
                return .init(status: 201)
            case "PROPFIND" where request.path.contains(".tidesync-tmp-probe-"):
                let read = holder.withLock { $0?.bodyBytesRead } ?? 0
                let size = state.withLock { state in listedSize(max(0, read - state.bodyBytes), state.size) }
                let name = request.path.split(separator: "/").last.map(String.init) ?? ""
                return .init(status: 207, headers: [("Content-Type", "application/xml; charset=utf-8")], body: """
                    <?xml version="1.0" encoding="utf-8"?>
                    <d:multistatus xmlns:d="DAV:"><d:response><d:href>/dav/\(name)</d:href><d:propstat><d:prop>\
                    <d:resourcetype/><d:getcontentlength>\(size)</d:getcontentlength><d:getetag>"e\(size)"</d:getetag></d:prop>\
                    <d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus>
                    """)
            case "MOVE" where locks: return .init(status: 412)
            case "LOCK" where locks: return .init(status: 200, headers: [("Lock-Token", "<opaquelocktoken:fake>")])
            case "DELETE": return .init(status: 204)
            case "PROPFIND": return FakeDAVServer.emptyRoot
            default: return .init(status: 405)
            }
        }
        holder.withLock { $0 = server }
        return server
    }

    static func heldPuts(_ server: FakeDAVServer) -> Int {
        server.requests.filter { $0.method == "PUT" && $0.headers["content-length"] == "131072" }.count
    }

    @Test("nothing seen while the held PUT waited: checked with a PUT larger than the connection holds before it is taken for atomic")
    func atomicOnlyFromTheDecisiveCheck() async throws {
        let server = try Self.server { _, size in size }
        defer { server.stop() }
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: "u", password: "secret-pw", allowInsecureHTTP: false))
        #expect(try await store.writeGuard() == .conditionalHeaders)
        #expect(Self.heldPuts(server) == 1, "one timed check: \(server.requests.map(\.method))")
        // The decisive PUT is cut short before its last byte, so the server never logs it;
        // what it read says it ran.
        #expect(server.bodyBytesRead >= WebDAVStore.decisivePart, "the decisive check ran: \(server.bodyBytesRead) body bytes read")
        #expect(!server.requests.contains { $0.method == "LOCK" }, "taken for atomic, its locks are not tried")
        // On a connection of its own: a kept-alive one's receive buffer, grown by earlier
        // traffic, could hold the whole part while the server reads none of it.
        let heads = server.heads
        let large = try #require(heads.first { $0.length > WebDAVStore.decisivePart })
        #expect(heads.first { $0.connection == large.connection }?.length == large.length, "the large PUT was its connection's first request: \(heads)")
        await store.shutdown()
    }

    @Test("slow each time and the large PUT refused: nothing proven, so taken for a server that writes in place (its locks are tried)")
    func undecidedIsInPlace() async throws {
        let server = try Self.server(refusedBodiesOver: 1 << 20) { _, size in size }
        defer { server.stop() }
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: "u", password: "secret-pw", allowInsecureHTTP: false))
        // In place, its locks are tried (it has none, so If-Match guards it, with a warning).
        #expect(try await store.writeGuard() == .conditionalHeaders)
        #expect(server.requests.contains { $0.method == "LOCK" }, "the safe side tries the server's locks: \(server.requests.map(\.method))")
        await store.shutdown()
    }

    @Test("slow each time and the large PUT refused, on a server that says it is Apache: taken for atomic, no LOCK (Apache's lock database breaks under many)")
    func undecidedApacheStaysConditional() async throws {
        let server = try Self.server(refusedBodiesOver: 1 << 20, name: "Apache/2.4.66 (Debian)", locks: true) { _, size in size }
        defer { server.stop() }
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: "u", password: "secret-pw", allowInsecureHTTP: false))
        #expect(try await store.writeGuard() == .conditionalHeaders)
        #expect(!server.requests.contains { $0.method == "LOCK" }, "taken for atomic, its locks are not tried: \(server.requests.map(\.method))")
        await store.shutdown()
    }

    @Test("a refusal of the large PUT ends the decisive check with nothing proven")
    func refusalEndsTheCheck() async throws {
        let server = try Self.server(refusedBodiesOver: 1 << 20) { _, size in size }
        defer { server.stop() }
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: "u", password: "secret-pw", allowInsecureHTTP: false))
        // Not timed: in a suite starting hundreds of tests at once this check (0.1 s alone)
        // took 50 s, the whole probe 78 s, so no bound tells a missed refusal from a busy
        // machine there. (Before the refusal ended it, it took 63 s alone.)
        #expect(await store.decisiveLook(try RemotePath(["\(WebDAVStore.probePrefix)x"]), baseline: 0) == nil)  // as listed
        await store.shutdown()
    }

    @Test("only Apache httpd's own product token counts as Apache", arguments: [
        (" (Apache/2.4.66 (Debian))", true), (" (Apache)", true), (" (apache/2.2)", true),
        (" (Apache-Coyote/1.1)", false), (" (nginx/1.22.1)", false), (" (WsgiDAV/4.4.0 Cheroot/11.1.2)", false), ("", false),
    ])
    func apacheByName(server: String, isApache: Bool) {
        #expect(WebDAVStore.namesApache(server) == isApache)
    }

    @Test("the decisive check says atomic only from a look after the server has read most of its large PUT, however late the server begins")
    func decisiveWaitsForTheServer() async throws {
        // The server waits a second and a half before it reads the large body; each look
        // notes how much of it the server had read by then.
        let readAtLooks = Mutex<[Int]>([])
        let holder = Mutex<FakeDAVServer?>(nil)
        let server = try FakeDAVServer(largeBodyPause: 1_500_000) { request in
            switch request.method {
            case "PUT": return .init(status: 201)
            case "PROPFIND":
                readAtLooks.withLock { $0.append(holder.withLock { $0?.bodyBytesRead } ?? 0) }
                let name = request.path.split(separator: "/").last.map(String.init) ?? ""
                return .init(status: 207, headers: [("Content-Type", "application/xml; charset=utf-8")], body: """
                    <?xml version="1.0" encoding="utf-8"?>
                    <d:multistatus xmlns:d="DAV:"><d:response><d:href>/dav/\(name)</d:href><d:propstat><d:prop>\
                    <d:resourcetype/><d:getcontentlength>8</d:getcontentlength><d:getetag>"e8"</d:getetag></d:prop>\
                    <d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus>
                    """)
            default: return .init(status: 405)
            }
        }
        holder.withLock { $0 = server }
        defer { server.stop() }
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: "u", password: "secret-pw", allowInsecureHTTP: false))
        let verdict = await store.decisiveLook(try RemotePath(["\(WebDAVStore.probePrefix)x"]), baseline: 8)
        #expect(verdict == false)
        let looks = readAtLooks.withLock { $0 }
        #expect(looks.count > 1, "looked at before the server read the body too")
        #expect((looks.last ?? 0) >= 4 << 20, "decided from a look after the server had read \(looks.last ?? 0) bytes of the body")
        await store.shutdown()
    }

    @Test("a server that writes in place but had not begun reading the held PUT, and answered it at once: the large PUT finds it in place (its locks are tried)")
    func lateReaderIsInPlace() async throws {
        // The file does not change while the 128 KiB PUT is held (as if the server had not
        // begun reading it), and the PUT is answered at once; the large PUT grows it.
        let server = try Self.server { reading, size in reading > 1 << 20 ? reading : size }
        defer { server.stop() }
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: "u", password: "secret-pw", allowInsecureHTTP: false))
        // Found in place, its locks are tried (it has none, so If-Match guards it, with a warning).
        #expect(try await store.writeGuard() == .conditionalHeaders)
        #expect(server.requests.contains { $0.method == "LOCK" }, "the in-place verdict tries the server's locks: \(server.requests.map(\.method))")
        #expect(Self.heldPuts(server) == 1)
        await store.shutdown()
    }

    @Test("a proven verdict is kept and used at the next start without the large PUT (a kept 'atomic' after the quick check); an undecided one is not kept")
    func provenVerdictIsKept() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("verdict-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let memory = PutVerdictMemory(path: directory + "/d.put-verdict")
        let server = try Self.server { _, size in size }
        defer { server.stop() }
        let endpoint = try WebDAVEndpoint(baseURL: server.url, username: "u", password: "secret-pw", allowInsecureHTTP: false)
        let first = WebDAVStore(endpoint: endpoint, putVerdicts: memory)
        #expect(try await first.writeGuard() == .conditionalHeaders)
        await first.shutdown()
        #expect(server.bodyBytesRead >= WebDAVStore.decisivePart, "the first start proved it with the large PUT")
        #expect(memory.recall(origin: server.url.absoluteString, server: " (FakeDAV/1.0)") == false, "the proof was not kept")
        let (read, held) = (server.bodyBytesRead, Self.heldPuts(server))
        let second = WebDAVStore(endpoint: endpoint, putVerdicts: memory)
        #expect(try await second.writeGuard() == .conditionalHeaders)
        await second.shutdown()
        #expect(Self.heldPuts(server) == held + 1, "the next start skipped the quick check, which can still prove 'in place'")
        #expect(server.bodyBytesRead - read < 1 << 20, "the next start sent the large PUT again")

        // A server behind the same URL and name that now writes in place: the quick check
        // proves it, and that is kept. The quick check proves it only when the server reads
        // the held half within its 250 ms (on an idle machine); a busy one (beside two CPU
        // hogs it failed to) keeps "atomic" for that start, and a later start proves it.
        let swapped = try Self.server { reading, size in reading > 0 ? reading : size }
        defer { swapped.stop() }
        let swappedEndpoint = try WebDAVEndpoint(baseURL: swapped.url, username: "u", password: "secret-pw", allowInsecureHTTP: false)
        #expect(memory.remember(false, origin: swapped.url.absoluteString, server: " (FakeDAV/1.0)"))
        try await eventually("a start's quick check finds the swapped server in place: \(swapped.requests.map(\.method))") {
            let third = WebDAVStore(endpoint: swappedEndpoint, putVerdicts: memory)
            let guarded = try await third.writeGuard()
            await third.shutdown()
            #expect(guarded == .conditionalHeaders)
            return swapped.requests.contains { $0.method == "LOCK" }
        }
        #expect(memory.recall(origin: swapped.url.absoluteString, server: " (FakeDAV/1.0)") == true)

        // Undecided (the large PUT refused): taken for in place, not kept.
        let refusing = try Self.server(refusedBodiesOver: 1 << 20) { _, size in size }
        defer { refusing.stop() }
        let other = PutVerdictMemory(path: directory + "/e.put-verdict")
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: refusing.url, username: "u", password: "secret-pw", allowInsecureHTTP: false),
                                putVerdicts: other)
        #expect(try await store.writeGuard() == .conditionalHeaders)
        await store.shutdown()
        #expect(!FileManager.default.fileExists(atPath: other.path), "an undecided verdict was kept")
    }

    @Test("a kept verdict counts only for the same URL and Server header, for a week, and not from a file it cannot read")
    func keptVerdictScope() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("verdict-\(UUID().uuidString)").path
        defer { unlink(path) }
        let memory = PutVerdictMemory(path: path)
        let (origin, server) = ("https://dav.example/files/", " (Apache/2.4.66 (Debian))")
        let proven = Date(timeIntervalSince1970: 2_000_000_000)
        #expect(memory.recall(origin: origin, server: server) == nil)
        #expect(memory.remember(true, origin: origin, server: server, now: proven))
        #expect(memory.recall(origin: origin, server: server, now: proven + 3600) == true)
        #expect(memory.recall(origin: origin, server: " (Apache/2.4.67 (Debian))", now: proven) == nil, "another server version")
        #expect(memory.recall(origin: "https://dav.example/other/", server: server, now: proven) == nil, "another URL")
        #expect(memory.recall(origin: origin, server: server, now: proven + PutVerdictMemory.lifetime) == nil, "older than a week")
        #expect(memory.recall(origin: origin, server: server, now: proven - 3600) == nil, "proven in the future")
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: path))
        #expect(memory.recall(origin: origin, server: server, now: proven) == nil)
        #expect(!FileManager.default.fileExists(atPath: path + ".tmp"))
    }
}
