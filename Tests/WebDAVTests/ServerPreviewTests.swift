import Foundation
import SyncEngine
import Testing
import TestSupport
@testable import WebDAV

/// Nextcloud's server previews, against a fake server that answers as Nextcloud's
/// documentation says (PROPFIND with `oc:fileid`, `nc:has-preview`; GET
/// `/index.php/core/preview`). Not tested against a live Nextcloud.
@Suite("Nextcloud server previews")
struct ServerPreviewTests {
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 100)

    /// A Nextcloud at `/nc/` with one file, `photo.jpg`, of version "v1".
    static func nextcloud(fileID: String = "4711", hasPreview: String = "true", etag: String = "\"v1\"",
                          preview: FakeDAVServer.Response = .init(status: 200, headers: [("Content-Type", "image/png")], bytes: png))
        throws -> FakeDAVServer {
        try FakeDAVServer { request in
            switch request.method {
            case "PROPFIND" where request.path.hasSuffix("/photo.jpg"):
                return .init(status: 207, headers: [("Content-Type", "application/xml; charset=utf-8")], body: """
                    <?xml version="1.0"?>
                    <d:multistatus xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns">\
                    <d:response><d:href>/nc/remote.php/dav/files/alice/photo.jpg</d:href><d:propstat><d:prop>\
                    <d:resourcetype/><d:getcontentlength>9000000</d:getcontentlength><d:getetag>\(etag)</d:getetag>\
                    <oc:fileid>\(fileID)</oc:fileid><nc:has-preview>\(hasPreview)</nc:has-preview></d:prop>\
                    <d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus>
                    """)
            case "GET" where request.path.hasPrefix("/nc/index.php/core/preview?"): return preview
            default: return .init(status: 404)
            }
        }
    }

    /// Runs `body` with a store of `server` at `path`, and shuts the store down whatever happens.
    static func withStore(_ server: FakeDAVServer, path: String = "nc/remote.php/dav/files/alice/",
                          _ body: (WebDAVStore) async throws -> Void) async throws {
        let url = URL(string: "http://127.0.0.1:\(server.port)/\(path)")!
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: url, username: "alice", password: "pw", allowInsecureHTTP: true))
        do { try await body(store) } catch {
            await store.shutdown()
            throw error
        }
        await store.shutdown()
    }

    @Test("a preview the listing says exists is fetched from /index.php/core/preview with the file's id, the size and the account")
    func fetched() async throws {
        let server = try Self.nextcloud()
        defer { server.stop() }
        try await Self.withStore(server) { store in
            let preview = try await store.serverPreview(of: p("photo.jpg"), version: ETag(value: "v1"), longSide: 256)
            #expect(preview == Self.png)
        }
        let get = try #require(server.requests.first { $0.method == "GET" }, "\(server.requests)")
        #expect(get.path == "/nc/index.php/core/preview?fileId=4711&x=256&y=256&a=1", "\(get.path)")
        #expect(get.headers["authorization"]?.hasPrefix("Basic ") == true)
        let propfind = try #require(server.requests.first { $0.method == "PROPFIND" })
        #expect(propfind.headers["depth"] == "0")
    }

    @Test("no preview: has-preview false, an id that is not a number, an answer that is no image or an error")
    func none() async throws {
        let cases: [FakeDAVServer] = [
            try Self.nextcloud(hasPreview: "false"),
            try Self.nextcloud(fileID: "12&amp;x=1"),  // "12&x=1": no query of ours may be widened
            try Self.nextcloud(preview: .init(status: 200, headers: [("Content-Type", "text/html")], body: "<html>log in</html>")),
            try Self.nextcloud(preview: .init(status: 404)),
        ]
        for (index, server) in cases.enumerated() {
            try await Self.withStore(server) { store in
                let preview = try await store.serverPreview(of: p("photo.jpg"), version: ETag(value: "v1"), longSide: 256)
                #expect(preview == nil, "case \(index)")
            }
            if index < 2 { #expect(!server.requests.contains { $0.method == "GET" }, "case \(index): asked for a preview") }
            server.stop()
        }
    }

    @Test("a file changed on the server is versionNoLongerAvailable, and no preview of the new version is fetched")
    func changed() async throws {
        let server = try Self.nextcloud(etag: "\"v2\"")
        defer { server.stop() }
        try await Self.withStore(server) { store in
            await expectCode(.versionNoLongerAvailable) {
                _ = try await store.serverPreview(of: p("photo.jpg"), version: ETag(value: "v1"), longSide: 256)
            }
        }
        #expect(!server.requests.contains { $0.method == "GET" })
    }

    @Test("a server that is no Nextcloud is not asked at all")
    func otherServers() async throws {
        let server = try Self.nextcloud()
        defer { server.stop() }
        try await Self.withStore(server, path: "dav/") { store in
            let preview = try await store.serverPreview(of: p("photo.jpg"), version: ETag(value: "v1"), longSide: 256)
            #expect(preview == nil)
        }
        #expect(server.requests.isEmpty)
    }
}
