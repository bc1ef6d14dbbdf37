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
    /// A server that honours If-Match and If-None-Match, has no LOCK, answers a PUT of the
    /// check's 128 KiB half a second after its body ended, and lists the scratch file with
    /// the size `listedSize` gives (the number of 128 KiB PUTs answered so far, the number
    /// of PROPFINDs of it since, and the size its last PUT left).
    static func server(refusedBodiesOver: Int = .max, name: String = "FakeDAV/1.0", locks: Bool = false,
                       listedSize: @escaping @Sendable (_ bigPuts: Int, _ looks: Int, _ size: Int) -> Int) throws -> FakeDAVServer {
        let state = Mutex((bigPuts: 0, looks: 0, size: 0))
        return try FakeDAVServer(refusedBodiesOver: refusedBodiesOver, serverName: name) { request in
            switch request.method {
            case "PUT" where request.headers["if-match"] != nil || request.headers["if-none-match"] != nil:
                return .init(status: 412)
            case "PUT":
                let length = Int(request.headers["content-length"] ?? "0") ?? 0
                // The pace of a slow server, not a wait for an event.
                if length == 131_072 { usleep(500_000) }
                state.withLock { state in
                    state.size = length
                    if length == 131_072 { state.bigPuts += 1; state.looks = 0 }
                }
                return .init(status: 201)
            case "PROPFIND" where request.path.contains(".tidesync-tmp-probe-"):
                let size = state.withLock { state in
                    state.looks += 1
                    return listedSize(state.bigPuts, state.looks, state.size)
                }
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
        #expect(server.requests.contains { $0.method == "PUT" && $0.headers["content-length"] == "\(WebDAVStore.decisivePart + 1)" },
                "the decisive check ran")
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
        // The second time, the server has begun the PUT when the file is looked at after the
        // baseline: it holds the first half only.
        let server = try Self.server { bigPuts, looks, size in bigPuts == 1 && looks > 1 ? 65_536 : size }
        defer { server.stop() }
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: "u", password: "secret-pw", allowInsecureHTTP: false))
        // Found in place, its locks are tried (it has none, so If-Match guards it, with a warning).
        #expect(try await store.writeGuard() == .conditionalHeaders)
        #expect(server.requests.contains { $0.method == "LOCK" }, "the in-place verdict tries the server's locks: \(server.requests.map(\.method))")
        #expect(Self.heldPuts(server) == 2)
        await store.shutdown()
    }
}
