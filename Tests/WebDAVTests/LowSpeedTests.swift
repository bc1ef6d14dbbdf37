import Foundation
import SyncEngine
import Testing
import TestSupport
@testable import WebDAV

/// The low-speed limit: a server that trickles fails the request with
/// `serverUnreachable` instead of holding it (and the daemon) forever.
@Suite("WebDAV low-speed limit")
struct LowSpeedTests {
    static let limits = TransferLimits(connectTimeout: .seconds(2), lowSpeedLimit: 1024, lowSpeedTime: .seconds(2))

    @Test("the watch: slow only once a whole window moved less than the limit", arguments: [
        // (bytes moved each second, the first second judged too slow; nil: never)
        ([Int64](repeating: 2048, count: 10), nil as Int?),
        ([Int64](repeating: 1, count: 10), 2),
        ([0, 0, 0, 0, 4096, 0, 0, 0, 0, 0], 2),
        ([0, 2048, 0, 2048, 0, 2048, 0, 2048, 0, 2048], nil),
        ([4096, 4096, 4096, 0, 0, 0, 0], 5),
    ])
    func watch(perSecond: [Int64], firstSlow: Int?) {
        var watch = LowSpeedWatch(limits: Self.limits)
        var total: Int64 = 0
        var slow: Int?
        for (index, bytes) in perSecond.enumerated() where slow == nil {
            total += bytes
            if watch.isTooSlow(total: total, elapsed: .seconds(index + 1)) { slow = index + 1 }
        }
        #expect(slow == firstSlow)
    }

    @Test("a limit of 0 turns the watch off")
    func off() {
        var watch = LowSpeedWatch(limits: TransferLimits(lowSpeedLimit: 0, lowSpeedTime: .seconds(1)))
        #expect((1...10).allSatisfy { !watch.isTooSlow(total: 0, elapsed: .seconds($0)) })
    }

    @Test("a PROPFIND answered one byte at a time fails as serverUnreachable, not hung")
    func tricklingListing() async throws {
        let server = try FakeDAVServer { request in
            var answer = request.method == "PUT" ? FakeDAVServer.Response(status: 412) : FakeDAVServer.emptyRoot
            if request.method == "PROPFIND" { answer.bytesPerSecond = 5 }
            return answer
        }
        defer { server.stop() }
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: nil, password: nil,
                                                             allowInsecureHTTP: false), limits: Self.limits)
        let error = await Self.failure(within: .seconds(60)) { _ = try await store.children(of: .root) }
        #expect(error?.code == .serverUnreachable)
        #expect(error?.message.contains("too slowly") == true)
        await store.shutdown()
    }

    @Test("a download whose body trickles fails as serverUnreachable, not hung")
    func tricklingDownload() async throws {
        let body = String(repeating: "x", count: 100_000)
        let server = try FakeDAVServer { request in
            guard request.method == "GET" else { return .init(status: 404) }
            // The head arrives at once: only the low-speed limit can end this.
            return .init(status: 200, headers: [("ETag", "\"v1\"")], body: body, bytesPerSecond: 5, trickleBodyOnly: true)
        }
        defer { server.stop() }
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: nil, password: nil,
                                                             allowInsecureHTTP: false), limits: Self.limits)
        let destination = URL(fileURLWithPath: temporaryPath("trickle-"))
        defer { try? FileManager.default.removeItem(at: destination) }
        let error = await Self.failure(within: .seconds(60)) {
            _ = try await store.download(try RemotePath(["big.bin"]), range: nil, version: nil, to: destination, progress: nil)
        }
        #expect(error?.code == .serverUnreachable)
        await store.shutdown()
    }

    /// The error `operation` fails with; records an issue when it succeeds or is still
    /// running after `bound` (then it is cancelled, so a regression fails instead of hanging).
    static func failure(within bound: Duration, _ operation: @escaping @Sendable () async throws -> Void) async -> ProviderError? {
        await withTaskGroup(of: ProviderError??.self) { group in
            group.addTask {
                do {
                    try await operation()
                    Issue.record("the request succeeded")
                    return .some(nil)
                } catch {
                    return .some(error as? ProviderError)
                }
            }
            group.addTask {
                try? await Task.sleep(for: bound)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = await group.next(), let outcome = first else {
                Issue.record("the request was still running after \(bound)")
                return nil
            }
            return outcome
        }
    }
}
