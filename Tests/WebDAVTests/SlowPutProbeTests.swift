import Foundation
import Synchronization
import SyncEngine
import Testing
@testable import WebDAV

/// The in-place check of the write-guard probe on a server slow to answer its PUT: a
/// window in which nothing changed counts only when the server answered quickly, so a
/// busy server that writes in place (WsgiDAV beside heavy disk writes) is not taken for
/// an atomic one.
@Suite("the probe's in-place check on a slow server")
struct SlowPutProbeTests {
    /// A server that honours If-Match and If-None-Match, has no LOCK (unless `locks`),
    /// answers a PUT of the check's 128 KiB 1.2 s after its body ended (slow beside any
    /// "quick" of a busy machine), and lists the scratch file with the size `listedSize` gives (the number of 128 KiB PUTs answered so
    /// far, whether a request's body is being read now, and the size its last PUT left).
    static func server(refusedBodiesOver: Int = .max, name: String = "FakeDAV/1.0", locks: Bool = false,
                       listedSize: @escaping @Sendable (_ bigPuts: Int, _ reading: Bool, _ size: Int) -> Int) throws -> FakeDAVServer {
        let state = Mutex((bigPuts: 0, size: 0, bodyBytes: 0))
        let holder = Mutex<FakeDAVServer?>(nil)
        let server = try FakeDAVServer(refusedBodiesOver: refusedBodiesOver, serverName: name) { request in
            // Every body read whole so far: more than that read means one is arriving now. (A
            // body cut short is never handled here: after one, every request looks "reading";
            // only the decisive check cuts one, and it is the last PUT of a probe.)
            let length = Int(request.headers["content-length"] ?? "0") ?? 0
            state.withLock { $0.bodyBytes += length }
            switch request.method {
            case "PUT" where request.headers["if-match"] != nil || request.headers["if-none-match"] != nil:
                return .init(status: 412)
            case "PUT":
                // The pace of a slow server, not a wait for an event.
                if length == 131_072 { usleep(1_200_000) }
                state.withLock { state in
                    state.size = length
                    if length == 131_072 { state.bigPuts += 1 }
                }
                return .init(status: 201)
            case "PROPFIND" where request.path.contains(".tidesync-tmp-probe-"):
                let read = holder.withLock { $0?.bodyBytesRead } ?? 0
                let size = state.withLock { state in listedSize(state.bigPuts, read > state.bodyBytes, state.size) }
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

    @Test("nothing seen and a slow answer: looked at again for longer, then with a PUT larger than the connection holds, before it is taken for atomic")
    func slowAtomic() async throws {
        let server = try Self.server { _, _, size in size }
        defer { server.stop() }
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: "u", password: "secret-pw", allowInsecureHTTP: false))
        #expect(try await store.writeGuard() == .conditionalHeaders)
        #expect(Self.heldPuts(server) == 2, "one check for each window: \(server.requests.map(\.method))")
        // The decisive PUT is cut short before its last byte, so the server never logs it;
        // what it read says it ran.
        #expect(server.bodyBytesRead >= WebDAVStore.decisivePart, "the decisive check ran: \(server.bodyBytesRead) body bytes read")
        #expect(!server.requests.contains { $0.method == "LOCK" }, "taken for atomic, its locks are not tried")
        await store.shutdown()
    }

    @Test("slow each time and the large PUT refused: nothing proven, so taken for a server that writes in place (its locks are tried)")
    func undecidedIsInPlace() async throws {
        let server = try Self.server(refusedBodiesOver: 1 << 20) { _, _, size in size }
        defer { server.stop() }
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: "u", password: "secret-pw", allowInsecureHTTP: false))
        // In place, its locks are tried (it has none, so If-Match guards it, with a warning).
        #expect(try await store.writeGuard() == .conditionalHeaders)
        #expect(server.requests.contains { $0.method == "LOCK" }, "the safe side tries the server's locks: \(server.requests.map(\.method))")
        await store.shutdown()
    }

    @Test("slow each time and the large PUT refused, on a server that says it is Apache: taken for atomic, no LOCK (Apache's lock database breaks under many)")
    func undecidedApacheStaysConditional() async throws {
        let server = try Self.server(refusedBodiesOver: 1 << 20, name: "Apache/2.4.66 (Debian)", locks: true) { _, _, size in size }
        defer { server.stop() }
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: "u", password: "secret-pw", allowInsecureHTTP: false))
        #expect(try await store.writeGuard() == .conditionalHeaders)
        #expect(!server.requests.contains { $0.method == "LOCK" }, "taken for atomic, its locks are not tried: \(server.requests.map(\.method))")
        await store.shutdown()
    }

    @Test("a refusal of the large PUT ends the decisive check with nothing proven")
    func refusalEndsTheCheck() async throws {
        let server = try Self.server(refusedBodiesOver: 1 << 20) { _, _, size in size }
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

    @Test("nothing seen the first time, the file cut short the second: writes in place (its locks are tried)")
    func slowInPlace() async throws {
        // The second time, the file holds the first half only while the PUT's body arrives.
        let server = try Self.server { bigPuts, reading, size in bigPuts == 1 && reading ? 65_536 : size }
        defer { server.stop() }
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: "u", password: "secret-pw", allowInsecureHTTP: false))
        // Found in place, its locks are tried (it has none, so If-Match guards it, with a warning).
        #expect(try await store.writeGuard() == .conditionalHeaders)
        #expect(server.requests.contains { $0.method == "LOCK" }, "the in-place verdict tries the server's locks: \(server.requests.map(\.method))")
        #expect(Self.heldPuts(server) == 2)
        await store.shutdown()
    }
}
