#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Logging
import SyncEngine
import SystemCalls

/// What the domain loop reports as it works, and the user's controls it obeys (the
/// daemon's status monitor implements it).
public protocol LiveSyncObserver: Sendable {
    func passStarted()
    func passFinished(_ result: PassResult)
    /// The domain cannot sync now; the loop tries again after `delay`.
    func parked(_ error: ProviderError, retryIn delay: Duration)
    /// The watcher's health: folders watched (nil: no watcher), lost-event rescans since
    /// the start, folders left unwatched by the watch limit.
    func watcherChanged(watches: Int?, overflowRescans: Int, unwatched: Int)
    /// True while the user paused the domain: no pass starts.
    var isPaused: Bool { get }
    /// True (once) when the user asked for a pass now.
    func takeSyncNowRequest() -> Bool
    /// `wake` ends the loop's current wait; called on pause, resume and sync-now.
    func setWakeHandler(_ wake: @escaping @Sendable () -> Void)
}

/// A domain's sync loop while the daemon runs: the watcher, the change queue and the
/// passes they trigger.
public final class LiveSync: Sendable {
    /// The loop's timing, from the domain's config.
    public typealias Timing = DomainLoop.Timing

    public let pass: SyncPass
    public let timing: Timing
    /// Where the watcher leaves its events; tests add their own (a lost queue, …).
    public let queue: ChangeQueue
    let root: String
    let exclude: ExcludeList
    let stop: StopFlag
    let logger: Logger
    let addWatch: @Sendable (Int32, String, UInt32) -> Int32
    let observer: (any LiveSyncObserver)?
    private let counters = Mutex(Counters())

    struct Counters {
        var passes = 0
        var busy = false
        /// The last pass left work for a pass soon (`DomainLoop.followsUpSoon`).
        var followUpSoon = false
        /// Lost-event rescans already logged.
        var overflowsLogged = 0

        /// True (once per new count) when `overflows` lost-event rescans are news for the log.
        mutating func logs(overflows: Int) -> Bool {
            guard overflows > overflowsLogged else { return false }
            overflowsLogged = overflows
            return true
        }
    }

    /// How many passes finished since the start.
    public var passes: Int { counters.withLock { $0.passes } }
    /// True while a pass runs, and until the loop carried out what it decided from it.
    public var isBusy: Bool { counters.withLock { $0.busy } }
    /// True when the last pass left work that a pass takes up at once or within seconds:
    /// between the two the loop is not busy, but it is not quiet either.
    public var followsUpSoon: Bool { counters.withLock { $0.followUpSoon } }

    public init(pass: SyncPass, timing: Timing, root: String, exclude: ExcludeList, stop: StopFlag, logger: Logger,
                observer: (any LiveSyncObserver)? = nil,
                addWatch: @escaping @Sendable (Int32, String, UInt32) -> Int32 = { inotify_add_watch($0, $1, $2) }) {
        self.observer = observer
        self.pass = pass
        self.timing = timing
        self.root = root
        self.exclude = exclude
        self.stop = stop
        self.logger = logger
        self.addWatch = addWatch
        queue = ChangeQueue(debounce: timing.debounce, cap: timing.settleCap)
    }

    /// Syncs until stopped. Local changes come from the inotify watcher: each path is
    /// looked at once it settled (`debounce`), and only what really differs from the
    /// state DB becomes engine calls. The remote is walked every `poll_interval`; the
    /// whole sync folder is scanned at the start, after lost events, and every
    /// `rescan_interval` as the backstop. A parked domain (server unreachable, …) waits
    /// and tries again; events keep being collected meanwhile. `DomainLoop` decides all
    /// of it; this carries its steps out.
    public func run() async {
        stop.onStop { [queue] in queue.wakeup.signal() }
        observer?.setWakeHandler { [queue] in queue.wakeup.signal() }
        let clock = ContinuousClock()
        var watcher = startWatcher(queue)
        defer { watcher?.stop() }
        var loop = DomainLoop(timing: timing, start: clock.now, watching: watcher != nil)
        var step = DomainLoop.Step.observe
        while step != .stop {
            step = await carryOut(step, loop: &loop, watcher: &watcher, clock: clock)
        }
    }

    /// Carries out one step of the loop and returns the next.
    private func carryOut(_ step: DomainLoop.Step, loop: inout DomainLoop, watcher: inout InotifyWatcher?,
                          clock: ContinuousClock) async -> DomainLoop.Step {
        switch step {
        case .stop:
            return .stop
        case .observe:
            counters.withLock { $0.busy = false }
            let next = loop.begin(observe(known: loop.unwatched), at: clock.now)
            if case .unwatch = next {} else { reportWatcher(watcher, loop: loop) }
            return next
        case .wait(let deadline):
            await queue.wakeup.wait(until: deadline)
        case .unwatch(let reason):
            logger.error("\(reason); sync is stopped for this domain until it is back (nothing in it is taken as deleted)")
            watcher?.stop()
            watcher = nil
            reportWatcher(watcher, loop: loop)
        case .checkRoot:
            return loop.rootChecked(present: rootIsBack())
        case .watch:
            logger.notice("the sync folder \(root) is back; scanning it")
            watcher?.stop()
            watcher = startWatcher(queue)
            return loop.watched(watcher != nil)
        case .rewatch(let paths):
            for path in paths { queue.add((watcher?.watchAgain(path) ?? []) + [.folderAppeared(path)]) }
        case .collect(let everything):
            let (changes, firstSeen) = everything ? queue.takeAll() : queue.takeDue()
            return loop.collected(changes, firstSeen: firstSeen, nextDue: queue.deadline())
        case .pass(let scope):
            return await runPass(scope, loop: &loop)
        case .putBack(let paths, let firstSeen):
            logger.debug("\(paths.count) file(s) still open for writing; looked at again later")
            queue.putBack(paths, firstSeen: firstSeen)
        case .park(let error, let retryAt):
            reportPark(error, retryIn: loop.now.duration(to: retryAt))
        case .missingRoot(let retryAt):
            observer?.parked(ProviderError(.cannotSynchronize, "the sync folder \(root) is missing; sync is stopped until it is back (was it unmounted or moved?)"),
                             retryIn: loop.now.duration(to: retryAt))
        }
        return loop.next()
    }

    /// Says that the domain cannot sync, and when it tries again.
    private func reportPark(_ error: ProviderError, retryIn delay: Duration) {
        logger.error("\(error.message); trying again in \(Int(delay.components.seconds)) s",
                     metadata: error.underlying.map { ["cause": "\($0)"] } ?? [:])
        observer?.parked(error, retryIn: delay)
    }

    /// What the watcher's queue and the user's controls say now; says once which
    /// folders newly cannot be watched.
    private func observe(known: Set<RemotePath>) -> DomainLoop.Observation {
        let stopped = stop.isStopped
        let rootGone = queue.takeRootGone()
        let unwatched = queue.takeUnwatched()
        if !unwatched.isEmpty { warnUnwatched(unwatched, known: known) }
        let paused = observer?.isPaused == true
        return DomainLoop.Observation(stopped: stopped, paused: paused, syncNow: observer?.takeSyncNowRequest() == true,
                                      rootGone: rootGone, unwatched: unwatched)
    }

    private func reportWatcher(_ watcher: InotifyWatcher?, loop: DomainLoop) {
        observer?.watcherChanged(watches: watcher?.watchCount, overflowRescans: queue.overflowCount,
                                 unwatched: loop.unwatched.count)
    }

    /// Runs one pass over `scope` and tells the loop how it ended.
    private func runPass(_ scope: PassScope, loop: inout DomainLoop) async -> DomainLoop.Step {
        if case .watched(let settled, _) = scope, !settled.paths.isEmpty {
            let some = settled.paths.keys.map(\.description).sorted().prefix(8)
            logger.debug("settled: \(some.joined(separator: ", "))\(settled.paths.count > 8 ? " and \(settled.paths.count - 8) more" : "")")
        }
        let overflows = queue.overflowCount
        if counters.withLock({ $0.logs(overflows: overflows) }) {
            logger.warning("inotify lost events (queue overflow, \(overflows) since the start): scanning the whole sync folder")
        }
        counters.withLock { $0.busy = true }
        observer?.passStarted()
        // A pass over a large domain allocates its whole view (hundreds of MiB at 100 000
        // items) and frees it at the end; glibc keeps freed pages in its per-thread arenas,
        // so without a trim an idle daemon holds what its largest pass needed.
        defer { MemoryTrim.releaseFreedMemory() }
        do throws(ProviderError) {
            let result = try await pass.run(scope)
            result.log(to: logger)
            counters.withLock { $0.passes += 1 }
            observer?.passFinished(result)
            let next = loop.passFinished(DomainLoop.PassOutcome(result))
            counters.withLock { $0.followUpSoon = loop.followsUpSoon }
            return next
        } catch {
            counters.withLock { $0.followUpSoon = false }
            return loop.passFailed(error)
        }
    }

    /// Watches the sync folder, or returns nil (and logs why) when inotify cannot be
    /// used: the domain is then scanned every `poll_interval` instead.
    func startWatcher(_ queue: ChangeQueue) -> InotifyWatcher? {
        do {
            let watcher = try InotifyWatcher(root: root, exclude: exclude, addWatch: addWatch)
            let bundles = pass.scanner.bundles
            // Any change under a bundle is a change of the bundle, settling as one.
            watcher.start { events in queue.add(events.flatMap { $0.mapped(by: bundles) }) }
            logger.debug("watching \(watcher.watchCount) folder(s) under \(root)")
            return watcher
        } catch {
            logger.warning("\(error.message)", metadata: error.underlying.map { ["cause": "\($0)"] } ?? [:])
            return nil
        }
    }

    func rootIsBack() -> Bool {
        var st = stat()
        return lstat(root, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR
    }

    /// Says once per new batch that folders are not watched, why, and what to do.
    func warnUnwatched(_ paths: [RemotePath: Int32], known: Set<RemotePath>) {
        let fresh = paths.filter { !known.contains($0.key) }
        guard let (path, code) = fresh.min(by: { $0.key < $1.key }) else { return }
        let place = path.isRoot ? root : root + "/" + path.description
        let every = "they are scanned every \(Int(timing.unwatchedRescanInterval.components.seconds)) s instead"
        if code == ENOSPC {
            let limit = (try? String(contentsOfFile: "/proc/sys/fs/inotify/max_user_watches", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
            logger.warning("""
                the inotify watch limit is reached (fs.inotify.max_user_watches = \(limit)): \(fresh.count) folder(s) \
                such as \(place) are not watched; \(every). To raise the limit: \
                echo fs.inotify.max_user_watches=524288 | sudo tee /etc/sysctl.d/90-tidesync.conf && sudo sysctl --system
                """)
        } else {
            logger.warning("cannot watch \(fresh.count) folder(s) such as \(place): \(String(cString: strerror(code))); \(every)")
        }
    }
}
