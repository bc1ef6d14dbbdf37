import Foundation
import Logging
import Replica
import SyncEngine
import Testing
import TestSupport

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

    func log(event: LogEvent) {
        capture.append("\(event.level): \(event.message)")
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
    /// True while this run holds one of `TestSlots.liveLoops` (from `start` to `finish`).
    private var holdsSlot = false
    private let slotLock = NSLock()

    init(_ world: SyncWorld, debounce: Duration = .milliseconds(300), poll: Duration = .seconds(3600),
         exclude: [String] = [], addWatch: (@Sendable (Int32, String, UInt32) -> Int32)? = nil) {
        let capture = log
        let logger = Logger(label: "live") { _ in
            CapturingLogHandler(capture: capture, logLevel: LiveRun.printsLog ? .debug : .info)
        }
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

    /// True when `TIDESYNC_TEST_LIVE_LOG` is set: every live loop logs at debug level and
    /// its whole log is printed when its test ends, passed or failed.
    static var printsLog: Bool { ProcessInfo.processInfo.environment["TIDESYNC_TEST_LIVE_LOG"] != nil }

    /// Waits for a live-loop slot (only a few loops run at once), starts the loop and
    /// waits for its first (full) pass.
    func start() async throws {
        await TestSlots.liveLoops.acquire()
        slotLock.withLock { holdsSlot = true }
        let live = self.live
        task = Task { await live.run() }
        try await eventually("the first pass") { live.passes >= 1 }
    }

    /// Waits until nothing waits to settle, no pass runs and the journal is empty. The loop
    /// is held while it looks (so no pass can start between the looks), then let go: a
    /// check needs no quiet moment of its own, which a short poll interval on a loaded
    /// machine may never leave. Held, the check is made twice 100 ms apart, so events of the
    /// last pass's own writes that the watcher thread had still to deliver are seen. After
    /// `finish` the queue is not looked at: nothing takes from it any more (a folder the
    /// watch limit left out is queued again every rescan interval, so a stop often finds
    /// one waiting).
    func quiesce(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let finished = task.map { _ in stop.isStopped } ?? false
        let journalEmpty = { [live] in try live.pass.runner.provider.pendingOperations().isEmpty }
        if finished {
            try await eventually("quiet", sourceLocation: sourceLocation) { try !live.isBusy && journalEmpty() }
            return
        }
        try await eventually("quiet", sourceLocation: sourceLocation) {
            try await hold(sourceLocation: sourceLocation)
            defer { release() }
            // Quiet: nothing waits in the queue, nothing in the journal, and the last pass
            // left nothing to take up at once or within seconds (a guard that found the
            // server changed, a server still changing).
            guard try live.queue.waiting == 0 && journalEmpty() && !live.followsUpSoon else { return false }
            try await Task.sleep(for: .milliseconds(100))
            return try live.queue.waiting == 0 && journalEmpty() && !live.followsUpSoon
        }
    }

    /// Holds new passes back (events are still collected) and waits until the loop stands
    /// still: it has seen the pause at the top of its loop, so no pass runs and none starts
    /// until `release`. (Waiting for `isBusy` to be false is not enough: the loop may have
    /// read the switch just before it was set and be about to start a pass.)
    func hold(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        pause.set(true)
        try await eventually("the loop to stand still", sourceLocation: sourceLocation) { pause.loopHeld && !live.isBusy }
    }

    /// Lets passes run again, at once.
    func release() { pause.set(false) }

    func finish() async {
        stop.stop()
        await task?.value
        releaseSlot()
    }

    /// A run that was never finished (its test threw first) gives its slot back when it goes.
    deinit {
        stop.stop()
        releaseSlot()
    }

    private func releaseSlot() {
        let held = slotLock.withLock { () -> Bool in
            defer { holdsSlot = false }
            return holdsSlot
        }
        if held { TestSlots.liveLoops.release() }
    }
}

/// The user's pause switch, as `tidesync pause` sets it; the rest of the observer is ignored.
final class PauseSwitch: LiveSyncObserver, @unchecked Sendable {
    private let lock = NSLock()
    private var paused = false
    private var held = false
    private var wake: (@Sendable () -> Void)?

    func set(_ value: Bool) {
        let handler = lock.withLock { () -> (@Sendable () -> Void)? in
            paused = value
            held = false
            return wake
        }
        handler?()
    }

    /// The loop reads the switch at the top of each round, before it takes any work; once
    /// it read `true` it waits, passing no work, until the switch is set again.
    var isPaused: Bool {
        lock.withLock {
            if paused { held = true }
            return paused
        }
    }

    /// True once the loop saw the pause set last: it stands still.
    var loopHeld: Bool { lock.withLock { held } }
    func setWakeHandler(_ wake: @escaping @Sendable () -> Void) { lock.withLock { self.wake = wake } }
    func takeSyncNowRequest() -> Bool { false }
    func passStarted() {}
    func passFinished(_ result: PassResult) {}
    func parked(_ error: ProviderError, retryIn delay: Duration) {}
    func watcherChanged(watches: Int?, overflowRescans: Int, unwatched: Int) {}
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
            // What the loop said, for a test that timed out waiting for it (seen on a loaded
            // machine: a first upload not there within 60 s, with nothing else to go on).
            print("--- \(remote): the live loop's log (last 80 lines) ---\n" + run.log.all.suffix(80).joined(separator: "\n"))
            throw error
        }
        await run.finish()
        if LiveRun.printsLog { print("--- \(remote): the live loop's log ---\n" + run.log.all.joined(separator: "\n")) }
    }
}

extension SyncWorld {
    /// The file's contents on the server, or nil.
    func serverText(_ relative: String) -> String? { readFile(onServer(relative)) }

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
        guard remote == .apache, let path = TestApache.accessLog, let text = readFile(path) else { return [] }
        let marker = "/" + (remoteDisk as NSString).lastPathComponent + "/"
        return text.split(separator: "\n").map(String.init).filter { $0.contains(marker) }
    }

    /// Waits until this collection's lines in Apache's access log stop coming: Apache writes
    /// a request's line after its response, so a step can be over (the file there) before
    /// its line is. Returns once the count held for 200 ms; at once for the local store.
    func accessLogSettled(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        guard remote == .apache else { return }
        var count = accessLogLines().count
        var since = ContinuousClock.now
        try await eventually("the access log to settle", sourceLocation: sourceLocation) {
            let now = accessLogLines().count
            if now != count { (count, since) = (now, .now) }
            return ContinuousClock.now - since >= .milliseconds(200)
        }
    }

    /// The access log's `method` requests after its first `since` lines, the one-time
    /// probe's (on `.tidesync-tmp-probe-` scratch files) left out.
    func requests(_ method: String, since: Int) -> [String] {
        accessLogLines().dropFirst(since).filter { $0.contains("\"\(method) ") && !$0.contains(".tidesync-tmp-probe-") }
    }
}
