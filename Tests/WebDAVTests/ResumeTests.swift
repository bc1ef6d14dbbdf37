import Foundation
import SyncEngine
import Testing
import TestSupport
@testable import WebDAV

/// Resumed downloads against a server that answers ranges rightly, ignores them, or
/// answers with other bytes: only a 206 for exactly the bytes asked for is spliced.
@Suite("WebDAV download resume")
struct ResumeTests {
    /// 6 MiB whose pattern (36 bytes) does not divide the 4 MiB sync step, so bytes put at
    /// the wrong offset show.
    static let content = String(String(repeating: "abcdefghijklmnopqrstuvwxyz0123456789", count: (6 << 20) / 36 + 1).prefix(6 << 20))
    static let step = Int(WebDAVStore.syncStep)

    /// A part holding `prefix`, in a fresh folder.
    static func part(_ prefix: String) throws -> URL {
        let folder = URL(fileURLWithPath: temporaryPath("resume-"))
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent(".tidesync-part-\(UUID().uuidString)")
        try Data(prefix.utf8).write(to: url)
        return url
    }

    static func store(_ server: FakeDAVServer) throws -> WebDAVStore {
        WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: nil, password: nil, allowInsecureHTTP: false))
    }

    /// A server with `content` at version "v1" that honours Range and If-Range.
    static func honest(_ request: FakeDAVServer.Request) -> FakeDAVServer.Response {
        let body = Self.content
        guard request.method == "GET" else { return .init(status: 405) }
        if let range = request.headers["range"], request.headers["if-range"] == "\"v1\"",
           range.hasPrefix("bytes="), range.hasSuffix("-"), let start = Int(range.dropFirst(6).dropLast()) {
            return .init(status: 206, headers: [("ETag", "\"v1\""), ("Content-Range", "bytes \(start)-\(body.utf8.count - 1)/\(body.utf8.count)")],
                         body: String(body.dropFirst(start)))
        }
        return .init(status: 200, headers: [("ETag", "\"v1\"")], body: body)
    }

    @Test("a cut download asks for the rest with Range and If-Range and splices the 206")
    func splicesRest() async throws {
        let server = try FakeDAVServer(respond: Self.honest)
        defer { server.stop() }
        let store = try Self.store(server)
        let part = try Self.part(String(Self.content.prefix(Self.step + 1000)))
        defer { try? FileManager.default.removeItem(at: part.deletingLastPathComponent()) }
        let etag = try await store.download(try RemotePath(["big.bin"]), version: ETag(value: "v1"), resumingInto: part, progress: nil)
        #expect(etag?.value == "v1")
        let get = try #require(server.requests.last)
        #expect(get.headers["range"] == "bytes=\(Self.step)-")
        #expect(get.headers["if-range"] == "\"v1\"")
        #expect(try String(contentsOf: part, encoding: .utf8) == Self.content)
        await store.shutdown()
    }

    @Test("a 200 to a range request starts over from byte 0 and ends right")
    func restartsOnFullAnswer() async throws {
        let server = try FakeDAVServer { _ in .init(status: 200, headers: [("ETag", "\"v1\"")], body: Self.content) }
        defer { server.stop() }
        let store = try Self.store(server)
        let part = try Self.part(String(repeating: "x", count: Self.step + Self.step / 2))
        defer { try? FileManager.default.removeItem(at: part.deletingLastPathComponent()) }
        _ = try await store.download(try RemotePath(["big.bin"]), version: ETag(value: "v1"), resumingInto: part, progress: nil)
        #expect(server.requests.last?.headers["range"] == "bytes=\(Self.step)-")
        #expect(try String(contentsOf: part, encoding: .utf8) == Self.content)
        await store.shutdown()
    }

    @Test("a 206 for other bytes than asked fails and is never spliced", arguments: [0, 1000])
    func refusesOtherRange(start: Int) async throws {
        let body = Self.content
        let server = try FakeDAVServer { _ in
            .init(status: 206, headers: [("ETag", "\"v1\""), ("Content-Range", "bytes \(start)-\(body.utf8.count - 1)/\(body.utf8.count)")],
                  body: String(body.dropFirst(start)))
        }
        defer { server.stop() }
        let store = try Self.store(server)
        let kept = String(Self.content.prefix(Self.step + 1000))
        let part = try Self.part(kept)
        defer { try? FileManager.default.removeItem(at: part.deletingLastPathComponent()) }
        do {
            _ = try await store.download(try RemotePath(["big.bin"]), version: ETag(value: "v1"), resumingInto: part, progress: nil)
            Issue.record("the download succeeded with a 206 for other bytes")
        } catch {
            #expect(error.code == .cannotSynchronize)
        }
        #expect(try String(contentsOf: part, encoding: .utf8) == kept)
        await store.shutdown()
    }

    @Test("a weak version cannot go in If-Range: the download starts over without Range")
    func weakStartsOver() async throws {
        let server = try FakeDAVServer(respond: Self.honest)
        defer { server.stop() }
        let store = try Self.store(server)
        let part = try Self.part(String(Self.content.prefix(Self.step + 1000)))
        defer { try? FileManager.default.removeItem(at: part.deletingLastPathComponent()) }
        _ = try await store.download(try RemotePath(["big.bin"]), version: ETag(value: "v1", isWeak: true), resumingInto: part, progress: nil)
        #expect(server.requests.last?.headers["range"] == nil)
        #expect(try String(contentsOf: part, encoding: .utf8) == Self.content)
        await store.shutdown()
    }

    @Test("only bytes below the last fsynced multiple of the step are trusted", arguments: [
        (0, 0), (1, 0), (4 << 20, 0), ((4 << 20) + 1, 4 << 20), ((8 << 20) + 7, 8 << 20),
    ])
    func durableLength(size: Int, kept: Int) throws {
        let part = try Self.part("")
        defer { try? FileManager.default.removeItem(at: part.deletingLastPathComponent()) }
        #expect(truncate(part.path, off_t(size)) == 0)
        #expect(WebDAVStore.durableLength(of: part.path) == Int64(kept))
    }
}
