import Foundation
import Synchronization
import SyncEngine
import Testing
import TestSupport
@testable import WebDAV

/// The probe that decides how writes are guarded on a server, against fake servers with
/// one defect each (the real rclone is in `RcloneServerTests`).
@Suite("WebDAV write guard probe")
struct WriteGuardTests {
    /// A server that creates whatever is PUT, whatever the conditions, and answers the
    /// rest as `others` says.
    static func ignoringConditions(_ others: @escaping @Sendable (FakeDAVServer.Request) -> FakeDAVServer.Response?) throws -> FakeDAVServer {
        try FakeDAVServer { request in
            if let response = FakeDAVServer.probeListing(request) ?? others(request) { return response }
            switch request.method {
            case "PUT", "MKCOL": return .init(status: 201)
            case "DELETE": return .init(status: 204)
            case "MOVE" where request.headers["overwrite"] == "F": return .init(status: 412)
            case "PROPFIND": return FakeDAVServer.emptyRoot
            default: return .init(status: 405)
            }
        }
    }

    static func store(_ server: FakeDAVServer) throws -> WebDAVStore {
        WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: "u", password: "secret-pw", allowInsecureHTTP: false))
    }

    static func writesWithoutProbe(_ server: FakeDAVServer) -> [FakeDAVServer.Request] {
        server.requests.filter { ["PUT", "MOVE", "DELETE", "MKCOL"].contains($0.method) && !$0.path.contains(".tidesync-tmp-probe-") }
    }

    @Test("a server that ignores If-Match and has no LOCK is refused before anything is listed or written")
    func noLocks() async throws {
        let server = try Self.ignoringConditions { _ in nil }  // LOCK: 405
        defer { server.stop() }
        let store = try Self.store(server)
        do {
            _ = try await store.children(of: .root)
            Issue.record("the listing went ahead")
        } catch {
            #expect(error.code == .cannotSynchronize)
            #expect(error.message.contains(server.url.absoluteString) && error.message.contains("FakeDAV/1.0"), "names the server: \(error)")
            #expect(error.message.contains("ignores If-Match") && error.message.contains("LOCK"), "says what is wrong: \(error)")
            #expect(!error.description.contains("secret-pw"))
        }
        let source = URL(fileURLWithPath: temporaryPath("tidesync-guard-"))
        try Data("mine".utf8).write(to: source)
        defer { try? FileManager.default.removeItem(at: source) }
        do {
            _ = try await store.upload(from: source, to: p("doc.txt"), condition: .mustMatch(ETag(value: "v1")), progress: nil)
            Issue.record("the upload went ahead")
        } catch {
            #expect(error.code == .cannotSynchronize)
        }
        await expectCode(.cannotSynchronize) { try await store.delete(p("doc.txt"), version: ETag(value: "v1")) }
        await expectCode(.cannotSynchronize) { try await store.makeFolder(at: p("new")) }
        #expect(Self.writesWithoutProbe(server).isEmpty, "\(Self.writesWithoutProbe(server).map { "\($0.method) \($0.path)" })")
        #expect(server.requests.filter { $0.headers["if-match"] != nil }.count == 1, "the verdict is kept: one probe")
        #expect(server.requests.filter { $0.method == "DELETE" }.count >= 1, "the probe's scratch file is removed")
        await store.shutdown()
    }

    @Test("a server whose locks do not stop other writers is refused too")
    func unenforcedLocks() async throws {
        let server = try Self.ignoringConditions { request in
            request.method == "LOCK" ? .init(status: 200, headers: [("Lock-Token", "<opaquelocktoken:1>")]) : nil
        }
        defer { server.stop() }
        let store = try Self.store(server)
        do {
            _ = try await store.descendants(of: .root)
            Issue.record("the listing went ahead")
        } catch {
            #expect(error.code == .cannotSynchronize)
            #expect(error.message.contains("does not enforce its locks"), "\(error)")
        }
        await store.shutdown()
    }

    @Test("a server that answers the probe with 412 and has no LOCK is written to with If-Match, and nothing is left of the probe")
    func honoured() async throws {
        let server = try FakeDAVServer { request in
            if let response = FakeDAVServer.probeListing(request) { return response }
            return switch request.method {
            case "PUT" where request.headers["if-match"] != nil || request.headers["if-none-match"] != nil: .init(status: 412)
            case "PUT": .init(status: 201)
            case "DELETE": .init(status: 204)
            case "PROPFIND": FakeDAVServer.emptyRoot
            default: .init(status: 405)
            }
        }
        defer { server.stop() }
        let store = try Self.store(server)
        #expect(try await store.writeGuard() == .conditionalHeaders)
        #expect(try await store.children(of: .root).isEmpty)
        let methods = server.requests.map(\.method)
        #expect(methods.prefix(12) == ["PUT", "PROPFIND", "PUT", "MOVE", "DELETE", "DELETE", "DELETE", "DELETE", "PROPFIND", "PUT", "PUT", "PUT"]
                    && methods.suffix(2) == ["DELETE", "PROPFIND"],
                "a scratch file made, the root listed (are names beginning with a dot listed?), a second file moved to a name with \"?\" (refused here) and deleted wherever it may be, the first listed, two guarded PUTs over it refused, given 8 bytes, (looked at while a PUT is under way,) the file deleted; then the listing: \(methods)")
        // The held PUT's check runs a second time when the answer was slow (this machine busy).
        // (After two slow answers the decisive check's large PUT follows; cut short before
        // its last byte, it is never logged here.)
        let puts = server.requests.filter { $0.method == "PUT" }
        let checks = puts.filter { $0.headers["content-length"] == "131072" }.count
        #expect((1...2).contains(checks))
        #expect(puts.map { $0.headers["if-match"] ?? $0.headers["if-none-match"] }
            == [nil, nil, "\"tidesync-probe-no-such-version\"", "*", nil] + Array(repeating: nil, count: checks))
        #expect(puts.map { $0.headers["content-length"] }.suffix(checks + 1) == ["8"] + Array(repeating: "131072", count: checks))
        await store.shutdown()
    }

    @Test("a server that honours If-Match but only pretends to lock is written to with If-Match alone")
    func pretendedLocks() async throws {
        let server = try FakeDAVServer { request in
            if let response = FakeDAVServer.probeListing(request) { return response }
            return switch request.method {
            case "PUT" where request.headers["if-match"] != nil || request.headers["if-none-match"] != nil: .init(status: 412)
            case "PUT": .init(status: 201)
            case "LOCK": .init(status: 200, headers: [("Lock-Token", "<opaquelocktoken:fake>")])
            case "DELETE", "UNLOCK": .init(status: 204)
            case "PROPFIND": FakeDAVServer.emptyRoot
            default: .init(status: 405)
            }
        }
        defer { server.stop() }
        let store = try Self.store(server)
        #expect(try await store.writeGuard() == .conditionalHeaders)
        await store.shutdown()
    }

    @Test("a server that refuses a stale If-Match only over an existing file (WsgiDAV) keeps conditional headers, and takes no lock")
    func ifMatchOnExistingOnly() async throws {
        let made = Mutex(Set<String>())
        let server = try FakeDAVServer { request in
            if let response = FakeDAVServer.probeListing(request) { return response }
            let exists = made.withLock { $0.contains(request.path) }
            switch request.method {
            case "PUT" where exists && (request.headers["if-match"] != nil || request.headers["if-none-match"] != nil):
                return .init(status: 412)
            case "PUT":
                made.withLock { _ = $0.insert(request.path) }
                return .init(status: exists ? 204 : 201)
            case "DELETE":
                made.withLock { _ = $0.remove(request.path) }
                return .init(status: 204)
            case "LOCK": return .init(status: 200, headers: [("Lock-Token", "<opaquelocktoken:1>")])
            case "UNLOCK": return .init(status: 404)
            case "PROPFIND": return FakeDAVServer.emptyRoot
            default: return .init(status: 405)
            }
        }
        defer { server.stop() }
        let store = try Self.store(server)
        #expect(try await store.writeGuard() == .conditionalHeaders)
        #expect(!server.requests.contains { $0.method == "LOCK" || $0.method == "UNLOCK" })
        #expect(made.withLock { $0.isEmpty }, "the probe's scratch file is removed")
        await store.shutdown()
    }

    @Test("an upload listed short right after its PUT (rclone under load) is looked at again; one that stays short is that item's failure")
    func shortListingLookedAtAgain() async throws {
        for listingsShort in [1, 9] {
            let looks = Mutex(0)
            let server = try FakeDAVServer { request in
                guard request.method == "PROPFIND" else { return .init(status: 405) }  // HEAD too: the store lists
                let short = looks.withLock { $0 += 1; return $0 <= listingsShort }
                var answer = FakeDAVServer.file("up.tmp")
                if short { answer.body = answer.body.replacingOccurrences(of: "<d:getcontentlength>3<", with: "<d:getcontentlength>0<") }
                return answer
            }
            let store = try Self.store(server)
            let name = try RemotePath(["up.tmp"]), target = try RemotePath(["up.txt"])
            do {
                let entry = try await store.arrivedEntry(at: name, size: 3, of: target)
                #expect(listingsShort == 1 && entry.size == 3)
            } catch {
                #expect(listingsShort == 9 && error.code == .serverFailedItem, "\(error)")
                #expect(looks.withLock { $0 } == 7, "looked at seven times in all")
            }
            await store.shutdown()
        }
    }

    @Test("a temporary of ours that could not be found to be deleted (a malformed listing) is deleted when a later listing shows it")
    func lostTemporarySweptLater() async throws {
        let server = try FakeDAVServer { request in
            switch (request.method, request.path) {
            case ("DELETE", "/dav/docs/.tidesync-tmp-T1"): return .init(status: 404)  // its folder moved away meanwhile
            case ("DELETE", _): return .init(status: 204)
            case ("PROPFIND", _): return .init(status: 207, body: "<d:multistatus xmlns:d=\"DAV:\"><d:response>")  // cut off
            default: return .init(status: 405)
            }
        }
        let store = try Self.store(server)
        await store.removeTemporary(try RemotePath(string: "docs/.tidesync-tmp-T1"), created: true)
        let moved = try RemotePath(string: "dir-B23/.tidesync-tmp-T1")
        await store.sweepLostTemporaries(in: [RemoteEntry(path: moved, kind: .file, size: 3, etag: ETag(value: "e"))])
        #expect(server.requests.contains { $0.method == "DELETE" && $0.path == "/dav/dir-B23/.tidesync-tmp-T1" },
                "\(server.requests.map { "\($0.method) \($0.path)" })")
        await store.shutdown()
    }

    @Test("a probe that cannot reach the server fails like any request, and is tried again")
    func unreachable() async throws {
        let server = try FakeDAVServer { request in
            request.method == "PUT" ? .init(status: 503) : FakeDAVServer.emptyRoot
        }
        defer { server.stop() }
        let store = try Self.store(server)
        await expectCode(.serverUnreachable) { try await store.children(of: .root) }
        await expectCode(.serverUnreachable) { try await store.children(of: .root) }
        #expect(server.requests.filter { $0.method == "PUT" }.count == 2)
        await store.shutdown()
    }
}
