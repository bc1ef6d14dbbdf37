import Foundation
import Logging
import Replica
import SyncEngine
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Log lines kept for a test to look at.
final class LogCapture: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []

    func append(_ line: String) { lock.withLock { lines.append(line) } }
    func contains(_ text: String) -> Bool { lock.withLock { lines.contains { $0.contains(text) } } }
    var all: [String] { lock.withLock { lines } }
}

struct CapturingLogHandler: LogHandler {
    let capture: LogCapture
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
             file: String, function: String, line: UInt) {
        capture.append("\(level): \(message)")
    }
}

/// The domain loop of `tidesync run` (watcher, settling, passes) running on a world, with
/// short timings so tests stay quick; poll and rescan are an hour unless asked, so what
/// gets synced was found by the watcher.
final class LiveRun: @unchecked Sendable {
    let live: LiveSync
    let stop = StopFlag()
    let log = LogCapture()
    /// Holds passes back while a test changes both sides (`tidesync pause`).
    let pause = PauseSwitch()
    private var task: Task<Void, Never>?

    init(_ world: SyncWorld, debounce: Duration = .milliseconds(300), poll: Duration = .seconds(3600),
         exclude: [String] = [], addWatch: (@Sendable (Int32, String, UInt32) -> Int32)? = nil) {
        let capture = log
        let logger = Logger(label: "live") { _ in CapturingLogHandler(capture: capture) }
        let scanner = LocalScanner(root: world.localRoot, exclude: ExcludeList(patterns: ExcludeList.defaultPatterns + exclude))
        // The world's runner, logging here too: tests look for what its steps said.
        let shared = world.pass.runner
        let runner = PlanRunner(provider: shared.provider, folder: shared.folder, transfers: shared.transfers, logger: logger)
        let pass = SyncPass(runner: runner, scanner: scanner, host: "testhost",
                            massDelete: MassDeleteGuard(limit: 500), logger: logger)
        let timing = LiveSync.Timing(debounce: debounce, pollInterval: poll, rescanInterval: .seconds(3600))
        if let addWatch {
            live = LiveSync(pass: pass, timing: timing, root: world.localRoot, exclude: scanner.exclude, stop: stop,
                            logger: logger, observer: pause, addWatch: addWatch)
        } else {
            live = LiveSync(pass: pass, timing: timing, root: world.localRoot, exclude: scanner.exclude, stop: stop, logger: logger,
                            observer: pause)
        }
    }

    /// Starts the loop and waits for its first (full) pass.
    func start() async throws {
        let live = self.live
        task = Task { await live.run() }
        try await eventually("the first pass") { live.passes >= 1 }
    }

    /// Waits until nothing waits to settle, no pass runs and the journal is empty. After
    /// `finish` the queue is not looked at: nothing takes from it any more (a folder the
    /// watch limit left out is queued again every rescan interval, so a stop often finds
    /// one waiting).
    func quiesce(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        var quietSince: ContinuousClock.Instant?
        let finished = task.map { _ in stop.isStopped } ?? false
        try await eventually("quiet", sourceLocation: sourceLocation) {
            let settled = finished || live.queue.waiting == 0
            let quiet = try settled && !live.isBusy && live.pass.runner.provider.state.pendingOperations().isEmpty
            if !quiet { quietSince = nil } else if quietSince == nil { quietSince = .now }
            return quietSince.map { ContinuousClock.now - $0 >= .milliseconds(150) } ?? false
        }
    }

    /// Holds new passes back (events are still collected) and waits for a running one to end.
    func hold() async throws {
        pause.set(true)
        try await eventually("the running pass to end") { !live.isBusy }
    }

    /// Lets passes run again, at once.
    func release() { pause.set(false) }

    func finish() async {
        stop.stop()
        await task?.value
    }
}

/// The user's pause switch, as `tidesync pause` sets it; the rest of the observer is ignored.
final class PauseSwitch: LiveSyncObserver, @unchecked Sendable {
    private let lock = NSLock()
    private var paused = false
    private var wake: (@Sendable () -> Void)?

    func set(_ value: Bool) {
        let handler = lock.withLock { () -> (@Sendable () -> Void)? in
            paused = value
            return wake
        }
        handler?()
    }

    var isPaused: Bool { lock.withLock { paused } }
    func setWakeHandler(_ wake: @escaping @Sendable () -> Void) { lock.withLock { self.wake = wake } }
    func takeSyncNowRequest() -> Bool { false }
    func passStarted() {}
    func passFinished(_ result: PassResult) {}
    func parked(_ error: ProviderError, retryIn delay: Duration) {}
    func watcherChanged(watches: Int?, overflowRescans: Int, unwatched: Int) {}
}

/// Waits until `condition` holds, checking every 50 ms; records an issue after `timeout`.
func eventually(_ what: String, timeout: Duration = .seconds(60), sourceLocation: SourceLocation = #_sourceLocation,
                _ condition: () async throws -> Bool) async throws {
    let end = ContinuousClock.now + timeout
    while ContinuousClock.now < end {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(50))
    }
    Issue.record("timed out waiting for \(what)", sourceLocation: sourceLocation)
    throw CancellationError()
}

/// Runs `body` with a world whose domain loop is running, and always cleans up.
func withLiveWorld(_ remote: Remote, poll: Duration = .seconds(3600), exclude: [String] = [],
                   addWatch: (@Sendable (Int32, String, UInt32) -> Int32)? = nil,
                   _ body: (SyncWorld, LiveRun) async throws -> Void) async throws {
    try await withWorld(remote) { world in
        let run = LiveRun(world, poll: poll, exclude: exclude, addWatch: addWatch)
        do {
            try await run.start()
            try await body(world, run)
        } catch {
            await run.finish()
            throw error
        }
        await run.finish()
    }
}

extension SyncWorld {
    /// The file's contents on the server, or nil.
    func serverText(_ relative: String) -> String? { Self.read(onServer(relative)) }

    /// True when the server holds `text` at `relative`, the state DB has its row and no
    /// step is pending.
    func synced(_ relative: String, _ text: String) throws -> Bool {
        guard serverText(relative) == text, try itemID(relative) != nil else { return false }
        return try database.pendingOperations().isEmpty
    }

    /// The state DB's item at `relative`.
    func itemID(_ relative: String) throws -> ItemIdentifier? {
        Reconciler.paths(of: try database.allItems())[try RemotePath(string: relative)]?.id
    }

    /// Lines of Apache's access log about this world's collection so far (empty for the
    /// local-directory store).
    func accessLogLines() -> [String] {
        guard remote == .apache, let path = Server.accessLog, let text = Self.read(path) else { return [] }
        let marker = "/" + (remoteDisk as NSString).lastPathComponent + "/"
        return text.split(separator: "\n").map(String.init).filter { $0.contains(marker) }
    }

    /// Requests with `method` in the access log lines after the first `since`.
    func requests(_ method: String, since: Int) -> [String] {
        accessLogLines().dropFirst(since).filter { $0.contains("\"\(method) ") }
    }
}
