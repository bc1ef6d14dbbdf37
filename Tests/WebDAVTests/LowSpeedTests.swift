import Dispatch
import Foundation
import Synchronization
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

    /// How long a trickling exchange may run before the test calls it hung. The watch
    /// gives up after two of its one-second ticks, and alone this takes 2 s; but its ticks,
    /// and each step of the cancel, wait their turn on the test process's few threads, which
    /// the suite beside CPU hogs kept busy for long spans (a bound of 60 s was once missed:
    /// the answer's 80 s trickle ran to its end first, the cancel still queued). The
    /// trickles outlast this bound many times over, so only a hang reaches it.
    static let bound = Duration.seconds(300)

    @Test("a PROPFIND answered one byte at a time fails as serverUnreachable, not hung")
    func tricklingListing() async throws {
        let server = try FakeDAVServer { request in
            var answer = request.method == "PUT" ? FakeDAVServer.Response(status: 412) : FakeDAVServer.emptyRoot
            if request.method == "PROPFIND" {
                // Long enough that the trickle never ends while the test waits.
                answer.body += String(repeating: " ", count: 10_000)
                answer.bytesPerSecond = 5
            }
            return answer
        }
        defer { server.stop() }
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: nil, password: nil,
                                                             allowInsecureHTTP: false), limits: Self.limits)
        let error = await Self.failure(within: Self.bound) { _ = try await store.children(of: .root) }
        #expect(error?.code == .serverUnreachable)
        #expect(error?.message.contains("too slowly") == true)
        await store.shutdown()
    }

    @Test("a download whose body trickles fails as serverUnreachable, not hung")
    func tricklingDownload() async throws {
        let body = String(repeating: "x", count: 100_000)  // 5.5 hours at 5 bytes a second
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
        let error = await Self.failure(within: Self.bound) {
            _ = try await store.download(try RemotePath(["big.bin"]), range: nil, version: nil, to: destination, progress: nil)
        }
        #expect(error?.code == .serverUnreachable)
        await store.shutdown()
    }

    /// The suite beside CPU hogs: a 3-byte GET whose version a PROPFIND checks took over
    /// 30 s, each of its steps waiting its turn behind busy tasks, and was called too slow.
    /// Here ten tasks, each busy 200 ms at a time, share one thread with the download and
    /// its watchdog (and nothing else of the test run): every step of the exchange waits
    /// about 2 s for its turn, and the exchange (about 10 s) outlasts the 6 s window,
    /// which the wall clock called too slow.
    @Test("a process too busy to read an answer promptly does not call the server slow")
    func busyProcess() async throws {
        let server = try FakeDAVServer { request in
            switch request.method {
            case "GET": return .init(status: 200, body: "abc")  // no ETag: a PROPFIND checks the version
            case "PROPFIND": return FakeDAVServer.file("doc.txt")
            default: return .init(status: 405)
            }
        }
        defer { server.stop() }
        let store = WebDAVStore(endpoint: try WebDAVEndpoint(baseURL: server.url, username: nil, password: nil, allowInsecureHTTP: false),
                                limits: TransferLimits(connectTimeout: .seconds(30), lowSpeedLimit: 1024, lowSpeedTime: .seconds(6)))
        let destination = URL(fileURLWithPath: temporaryPath("busy-"))
        defer { try? FileManager.default.removeItem(at: destination) }
        let done = Done()
        let started = ContinuousClock.now
        let outcome: Result<ETag?, ProviderError> = await withTaskExecutorPreference(OneThread()) {
            await withTaskGroup(of: Result<ETag?, ProviderError>?.self) { group in
                for _ in 0..<10 {
                    group.addTask {
                        while !done.flag.load(ordering: .relaxed) {
                            Self.spin(for: .milliseconds(200))
                            await Task.yield()
                        }
                        return nil
                    }
                }
                group.addTask {
                    defer { done.flag.store(true, ordering: .relaxed) }
                    do throws(ProviderError) {
                        return .success(try await store.download(try RemotePath(["doc.txt"]), range: nil, version: ETag(value: "e1"),
                                                                 to: destination, progress: nil))
                    } catch {
                        return .failure(error)
                    }
                }
                var outcome: Result<ETag?, ProviderError> = .failure(ProviderError(.cancelled, "no answer"))
                for await result in group { if let result { outcome = result } }
                return outcome
            }
        }
        let took = ContinuousClock.now - started
        await store.shutdown()
        switch outcome {
        case .success(let served): #expect(served?.sameValue(as: ETag(value: "e1")) == true)
        case .failure(let error): Issue.record("the download failed after \(took): \(error)")
        }
        #expect(readFile(destination.path) == "abc")
        // The exchange must have outlasted the window, or this proved nothing.
        #expect(took > .seconds(6), "the busy tasks did not slow the exchange: \(took)")
    }

    /// Keeps the thread busy for `duration`, as a task that computes without awaiting.
    static func spin(for duration: Duration) {
        let end = ContinuousClock.now + duration
        while ContinuousClock.now < end {}
    }

    final class Done: Sendable { let flag = Atomic(false) }

    /// A task executor of one thread: the tasks that prefer it share that thread alone.
    final class OneThread: TaskExecutor {
        let queue = DispatchQueue(label: "tidesync.test.one-thread")
        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }
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
