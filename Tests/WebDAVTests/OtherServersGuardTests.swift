import Foundation
import SyncEngine
import Testing
import TestSupport
@testable import WebDAV

/// What the one-time probe finds on the real nginx, lighttpd and WsgiDAV that
/// packaging/test.sh starts, and the guard mode it picks (README, compatibility table). If
/// a later version of one of them changes, this says so first.
@Suite("the probe on nginx, lighttpd and WsgiDAV")
struct OtherServersGuardTests {
    /// Server name, the guard mode, and whether its listings carry ETags.
    static let expected: [String: (mode: WriteGuard, listsVersions: Bool)] = [
        "NGINX": (.locks, false), "LIGHTTPD": (.conditionalHeaders, true), "WSGIDAV": (.locks, true),
    ]

    static var servers: [String] { ["NGINX", "LIGHTTPD", "WSGIDAV"].filter { TestDAVServer(name: $0).configured } }

    @Test("the probe picks the documented guard mode, and takes no lock where If-Match works", arguments: servers)
    func guardMode(name: String) async throws {
        let server = TestDAVServer(name: name)
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url!, username: server.user,
                                                             password: server.password, allowInsecureHTTP: false))
        let mark = (try? FileManager.default.attributesOfItem(atPath: server.accessLog!)[.size] as? Int) ?? 0
        let mode: WriteGuard
        do { mode = try await store.writeGuard() } catch {
            await store.shutdown()
            throw error
        }
        #expect(mode == Self.expected[name]!.mode)
        #expect(store.listsVersions.withLock { $0 } == Self.expected[name]!.listsVersions)
        await store.shutdown()
        if mode == .conditionalHeaders {
            // WsgiDAV was once taken for a server that ignores If-Match, locked and logged "UNLOCK … answered 404";
            // it is locked now because its PUT writes in place (a cut upload would leave a truncated file).
            let log = String(decoding: (FileManager.default.contents(atPath: server.accessLog!) ?? Data()).dropFirst(mark), as: UTF8.self)
            #expect(!log.contains("\"LOCK ") && !log.contains("\"UNLOCK "), "the probe took a lock")
        }
    }
}
