import Foundation
import Synchronization
import SyncEngine
import Testing
import TestSupport
@testable import WebDAV

/// 403 is about one item, 401 about the account; after a 401 the password is read again.
@Suite("WebDAV permissions and passwords")
struct PermissionTests {
    @Test("a MOVE answered 403 while its parent exists is permission denied, not parent missing")
    func moveForbidden() async throws {
        // A lock-mode server (it ignores If-Match but its locks work) that refuses the final MOVE.
        let locked = Mutex(false)
        let server = try FakeDAVServer { request in
            if let response = FakeDAVServer.probeListing(request) { return response }
            let probe = request.path.contains(".tidesync-tmp-probe-")
            switch request.method {
            case "PUT" where probe && request.headers["if"] == nil && locked.withLock({ $0 }):
                return .init(status: 423)  // the probe's intruder, without the lock token
            case "PUT", "MKCOL": return .init(status: 201)
            case "MOVE" where probe: return .init(status: 412)
            case "MOVE": return .init(status: 403)
            case "LOCK":
                locked.withLock { $0 = true }
                return .init(status: 200, headers: [("Lock-Token", "<opaquelocktoken:1>")])
            case "DELETE", "UNLOCK": return .init(status: 204)
            case "PROPFIND": return FakeDAVServer.emptyRoot
            default: return .init(status: 405)
            }
        }
        defer { server.stop() }
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: nil, password: nil, allowInsecureHTTP: false))
        try await Self.using(store) {
            let mode = try await store.writeGuard()
            #expect(mode == .locks)
            do {
                _ = try await store.makeFolder(at: try RemotePath(["shared"]))
                Issue.record("the refused MOVE was taken for a success")
            } catch {
                #expect((error as? ProviderError)?.code == .permissionDenied, "\(error)")
                #expect((error as? ProviderError)?.disposition == .skipItem)
            }
        }
    }

    @Test("a GET answered 403 for a file that is gone by then is no such item, not permission denied; one still there stays denied",
          arguments: [false, true])
    func forbiddenWhileDeleted(stillThere: Bool) async throws {
        // Apache's answer when another client deletes the file between its stat and its open.
        let server = try FakeDAVServer { request in
            switch request.method {
            case "GET": return .init(status: 403)
            case "PROPFIND" where request.path.hasSuffix("/gone.txt"):
                return stillThere ? FakeDAVServer.file("gone.txt") : .init(status: 404)
            case "PROPFIND": return FakeDAVServer.emptyRoot
            default: return .init(status: 405)
            }
        }
        defer { server.stop() }
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: nil, password: nil, allowInsecureHTTP: false))
        try await Self.using(store) {
            let destination = URL(fileURLWithPath: temporaryPath("tidesync-gone-"))
            defer { try? FileManager.default.removeItem(at: destination) }
            do {
                _ = try await store.download(try RemotePath(["gone.txt"]), range: nil, version: nil, to: destination, progress: nil)
                Issue.record("a 403 was taken for a download")
            } catch {
                #expect((error as? ProviderError)?.code == (stillThere ? .permissionDenied : .noSuchItem), "\(error)")
            }
        }
    }

    @Test("a PROPFIND whose kept-alive connection the server closes unanswered is sent once more, on a new connection")
    func hungUpConnection() async throws {
        let hungUp = Mutex<Set<String>>([])
        let server = try FakeDAVServer { request in
            // Each method's first request is left unanswered, as on a connection just closed.
            if hungUp.withLock({ $0.insert(request.method).inserted }) { return .init(status: 0, hangUp: true) }
            return request.method == "PROPFIND" ? FakeDAVServer.file("a.txt") : .init(status: 201)
        }
        defer { server.stop() }
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: nil, password: nil, allowInsecureHTTP: false))
        try await Self.using(store) {
            let entry = try await store.entry(at: try RemotePath(["a.txt"]))
            #expect(entry.etag?.value == "e1")
            #expect(server.requests.filter { $0.method == "PROPFIND" }.count == 2)
            // A write too (Apache's idle-server maintenance closed connections mid-suite).
            let made = try await store.connection.send(store.connection.request("MKCOL", path: "/dav/new/"))
            #expect(made.status.code == 201)
            #expect(server.requests.filter { $0.method == "MKCOL" }.count == 2, "\(server.requests.map(\.method))")
        }
    }

    @Test("a guarded PUT whose connection the server closes before answering is sent once more, on a new connection")
    func hungUpPut() async throws {
        let made = Mutex(Set<String>())
        let hungUp = Mutex(false)
        let server = try FakeDAVServer { request in
            if let response = FakeDAVServer.probeListing(request) { return response }
            let exists = made.withLock { $0.contains(request.path) }
            switch request.method {
            case "PUT" where request.path.hasSuffix("/doc.txt") && !hungUp.withLock({ $0 }):
                // As cheroot (WsgiDAV) does with a kept-alive connection beyond its limit.
                hungUp.withLock { $0 = true }
                return .init(status: 0, hangUp: true)
            case "PUT" where exists && (request.headers["if-match"] != nil || request.headers["if-none-match"] != nil):
                return .init(status: 412)
            case "PUT":
                made.withLock { _ = $0.insert(request.path) }
                return .init(status: exists ? 204 : 201)
            case "DELETE":
                made.withLock { _ = $0.remove(request.path) }
                return .init(status: 204)
            case "HEAD": return .init(status: 200, headers: [("ETag", "\"e2\"")])
            case "PROPFIND": return FakeDAVServer.emptyRoot
            default: return .init(status: 405)
            }
        }
        defer { server.stop() }
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: nil, password: nil, allowInsecureHTTP: false))
        let source = temporaryPath("tidesync-put-")
        try Data("hello".utf8).write(to: URL(fileURLWithPath: source))
        defer { unlink(source) }
        try await Self.using(store) {
            _ = try await store.upload(from: URL(fileURLWithPath: source), to: try RemotePath(["doc.txt"]),
                                       condition: .mustNotExist, progress: nil)
            #expect(server.requests.filter { $0.method == "PUT" && $0.path.hasSuffix("/doc.txt") }.count == 2)
            #expect(made.withLock { $0.contains { $0.hasSuffix("/doc.txt") } })
        }
    }

    @Test("after a 401 the next request reads the password again, and only then")
    func passwordReadAgain() async throws {
        let accepted = Mutex("one")
        let server = try FakeDAVServer { request in
            let expected = "Basic " + Data("u:\(accepted.withLock { $0 })".utf8).base64EncodedString()
            return request.headers["authorization"] == expected ? FakeDAVServer.emptyRoot : .init(status: 401)
        }
        defer { server.stop() }
        let keyring = Mutex("one")
        let reads = Atomic(0)
        let store = WebDAVStore(
            endpoint: try WebDAVEndpoint(baseURL: server.url, username: "u", password: "one", allowInsecureHTTP: false),
            passwordSource: { () throws(ProviderError) -> String? in
                reads.add(1, ordering: .relaxed)
                return keyring.withLock { $0 }
            })
        try await Self.using(store) {
            _ = try await store.entry(at: .root)
            #expect(reads.load(ordering: .relaxed) == 0, "the password given at the start is used until the server refuses it")
            accepted.withLock { $0 = "two" }
            do {
                _ = try await store.entry(at: .root)
                Issue.record("the old password was accepted")
            } catch {
                #expect((error as? ProviderError)?.code == .notAuthenticated, "\(error)")
                #expect((error as? ProviderError)?.disposition == .parkDomain)
            }
            keyring.withLock { $0 = "two" }
            _ = try await store.entry(at: .root)
            #expect(reads.load(ordering: .relaxed) == 1)
            _ = try await store.entry(at: .root)
            #expect(reads.load(ordering: .relaxed) == 1, "read once per refusal, not per request")
        }
    }

    /// A password command that takes its time (a keyring waiting to be unlocked) ran under
    /// a lock on a thread of the shared pool: every other request blocked on that lock, and
    /// with them every thread, so nothing else in the process ran until it ended.
    @Test("while the password source runs, many requests wait for its one answer and the process's other tasks go on")
    func slowPasswordSource() async throws {
        let accepted = Mutex("one")
        let server = try FakeDAVServer { request in
            let expected = "Basic " + Data("u:\(accepted.withLock { $0 })".utf8).base64EncodedString()
            return request.headers["authorization"] == expected ? FakeDAVServer.emptyRoot : .init(status: 401)
        }
        defer { server.stop() }
        let release = DispatchSemaphore(value: 0)
        let released = Atomic(false)
        let reads = Atomic(0)
        let store = WebDAVStore(
            endpoint: try WebDAVEndpoint(baseURL: server.url, username: "u", password: "one", allowInsecureHTTP: false),
            passwordSource: { () throws(ProviderError) -> String? in
                reads.add(1, ordering: .relaxed)
                // Until the test, which needs a thread of the pool to get there, lets it go
                // (a bound, so that the old way fails instead of hanging).
                released.store(release.wait(timeout: .now() + 20) == .success, ordering: .relaxed)
                return "two"
            })
        try await Self.using(store) {
            accepted.withLock { $0 = "two" }
            await #expect(throws: ProviderError.self) { _ = try await store.entry(at: .root) }  // the refusal
            // On a thread of their own, which the rest of the suite cannot keep busy: the
            // requests and the test's own steps share it, as a daemon's tasks share its pool.
            try await withTaskExecutorPreference(LowSpeedTests.OneThread()) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<64 { group.addTask { _ = try await store.entry(at: .root) } }
                    // The source is running (or about to): these steps need the thread.
                    try await eventually("the password source to be asked") { reads.load(ordering: .relaxed) > 0 }
                    for _ in 0..<8 { await Task.yield() }
                    release.signal()
                    try await group.waitForAll()
                }
            }
            let (wasReleased, runs) = (released.load(ordering: .relaxed), reads.load(ordering: .relaxed))
            #expect(wasReleased, "the other tasks waited for the password source")
            #expect(runs == 1, "one run for all the requests that waited")
        }
    }

    /// Runs `body`, then shuts `store` down whether it threw or not (an HTTP client left
    /// running stops the whole test process).
    static func using(_ store: WebDAVStore, _ body: () async throws -> Void) async throws {
        do { try await body() } catch {
            await store.shutdown()
            throw error
        }
        await store.shutdown()
    }
}
