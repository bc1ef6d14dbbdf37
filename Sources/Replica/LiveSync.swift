#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Logging
import SyncEngine

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
    public struct Timing: Sendable {
        /// How long a path must be quiet before it is looked at.
        public var debounce: Duration
        /// How often the remote is walked.
        public var pollInterval: Duration
        /// How often the whole sync folder is scanned (the backstop).
        public var rescanInterval: Duration

        public init(debounce: Duration, pollInterval: Duration, rescanInterval: Duration) {
            self.debounce = debounce
            self.pollInterval = pollInterval
            self.rescanInterval = rescanInterval
        }

        /// How long a path may keep changing before it is synced anyway (a file written
        /// forever, a writer that never closes): 30 quiet periods, at least 30 s.
        public var settleCap: Duration { max(debounce * 30, .seconds(30)) }
        /// How often folders the watch limit left unwatched are scanned.
        public var unwatchedRescanInterval: Duration { min(pollInterval, .seconds(60)) }
    }

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
    }

    /// How many passes finished since the start.
    public var passes: Int { counters.withLock { $0.passes } }
    /// True while a pass runs.
    public var isBusy: Bool { counters.withLock { $0.busy } }

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

    /// How long a parked domain waits before trying again (5 s doubling, at most 5 min
    /// or `poll_interval`).
    public func retryDelay(_ failures: Int) -> Duration {
        min(timing.pollInterval, .seconds(min(300, 5 << min(max(failures, 1) - 1, 6))))
    }

    /// Syncs until stopped. Local changes come from the inotify watcher: each path is
    /// looked at once it settled (`debounce`), and only what really differs from the
    /// state DB becomes engine calls. The remote is walked every `poll_interval`; the
    /// whole sync folder is scanned at the start, after lost events, and every
    /// `rescan_interval` as the backstop. A parked domain (server unreachable, …) waits
    /// and tries again; events keep being collected meanwhile.
    public func run() async {
        stop.onStop { [queue] in queue.wakeup.signal() }
        observer?.setWakeHandler { [queue] in queue.wakeup.signal() }
        var watcher = startWatcher(queue)
        defer { watcher?.stop() }
        let clock = ContinuousClock()
        var needFull = true
        var nextRemote = clock.now, nextRescan = clock.now + timing.rescanInterval
        var followUp: ContinuousClock.Instant?
        var retryAt: ContinuousClock.Instant?
        var parkedFor = 0
        var unwatched: Set<RemotePath> = []
        var nextUnwatched: ContinuousClock.Instant?
        var rootGone = false
        var overflowsSeen = 0
        var resolving = 0  // passes in a row that left conflicts to resolve

        while !stop.isStopped {
            if let why = queue.takeRootGone() {
                logger.error("\(why); sync is stopped for this domain until it is back (nothing in it is taken as deleted)")
                watcher?.stop()
                watcher = nil
                rootGone = true
            }
            let newlyUnwatched = queue.takeUnwatched()
            if !newlyUnwatched.isEmpty {
                warnUnwatched(newlyUnwatched, known: unwatched)
                unwatched.formUnion(newlyUnwatched.keys)
                nextUnwatched = nextUnwatched ?? clock.now + timing.unwatchedRescanInterval
            }
            observer?.watcherChanged(watches: watcher?.watchCount, overflowRescans: queue.overflowCount, unwatched: unwatched.count)
            if observer?.isPaused == true {
                // Events keep being collected; nothing is synced until resumed (which,
                // like a stop, signals the wakeup).
                await queue.wakeup.wait(until: nil)
                continue
            }
            if observer?.takeSyncNowRequest() == true {
                retryAt = nil
                needFull = true
            }
            let now = clock.now
            if let retry = retryAt, now < retry {
                await queue.wakeup.wait(until: retry)
                continue
            }
            retryAt = nil
            if rootGone {
                guard rootIsBack() else {
                    retryAt = now + retryDelay(max(1, parkedFor))
                    observer?.parked(ProviderError(.cannotSynchronize, "the sync folder \(root) is missing; sync is stopped until it is back (was it unmounted or moved?)"),
                                     retryIn: retryDelay(max(1, parkedFor)))
                    continue
                }
                logger.notice("the sync folder \(root) is back; scanning it")
                rootGone = false
                watcher?.stop()
                watcher = startWatcher(queue)
                needFull = true
            }
            if let due = nextUnwatched, due <= now, let watcher {
                // Try to watch them again (the limit may have been raised) and scan them.
                let paths = unwatched
                unwatched = []
                nextUnwatched = nil
                for path in paths { queue.add(watcher.watchAgain(path) + [.folderAppeared(path)]) }
                continue
            }
            let full = needFull || watcher == nil && now >= nextRemote || now >= nextRescan || followUp.map { $0 <= now } ?? false
            let remoteDue = now >= nextRemote
            let (settled, firstSeen) = full ? queue.takeAll() : queue.takeDue()
            if full || remoteDue || !settled.isEmpty {
                let scope: PassScope = full ? .full : .watched(settled, remote: remoteDue)
                if !full, !settled.paths.isEmpty {
                    let some = settled.paths.keys.map(\.description).sorted().prefix(8)
                    logger.debug("settled: \(some.joined(separator: ", "))\(settled.paths.count > 8 ? " and \(settled.paths.count - 8) more" : "")")
                }
                let overflows = queue.overflowCount
                if overflows > overflowsSeen {
                    overflowsSeen = overflows
                    logger.warning("inotify lost events (queue overflow, \(overflows) since the start): scanning the whole sync folder")
                }
                counters.withLock { $0.busy = true }
                observer?.passStarted()
                defer { counters.withLock { $0.busy = false } }
                do throws(ProviderError) {
                    let result = try await pass.run(scope)
                    result.log(to: logger)
                    counters.withLock { $0.passes += 1 }
                    observer?.passFinished(result)
                    if !result.heldBack.isEmpty {
                        logger.debug("\(result.heldBack.count) file(s) still open for writing; looked at again later")
                        queue.putBack(result.heldBack, firstSeen: firstSeen ?? now)
                    }
                    if let parked = result.report.parked { throw parked }
                    if full || settled.fullScan {
                        needFull = false
                        nextRescan = now + timing.rescanInterval
                    }
                    if full || remoteDue || settled.fullScan { nextRemote = now + timing.pollInterval }
                    followUp = nil
                    if result.steps > 0 && !result.report.completes(result.steps) {
                        // Work is left: at once when this pass got somewhere or a guard
                        // found the server changed (a conflict to resolve with a fresh look
                        // at it, a few times in a row at most), otherwise when the failed
                        // items' backoff allows.
                        resolving = result.report.resolved > 0 ? resolving + 1 : 0
                        let promptly = result.report.succeeded > 0 || (result.report.resolved > 0 && resolving <= 3)
                        followUp = promptly ? now : now + min(timing.pollInterval, .seconds(60))
                    } else {
                        resolving = 0
                    }
                    parkedFor = 0
                } catch {
                    parkedFor += 1
                    let delay = retryDelay(parkedFor)
                    logger.error("\(error.message); trying again in \(Int(delay.components.seconds)) s",
                                 metadata: error.underlying.map { ["cause": "\($0)"] } ?? [:])
                    retryAt = now + delay
                    observer?.parked(error, retryIn: delay)
                    // What settled was not synced: the next pass looks at everything.
                    needFull = true
                    if error.code == .cannotSynchronize, !rootIsBack() { rootGone = true }
                }
                continue
            }
            var wake = [nextRemote, nextRescan]
            wake += [queue.deadline(), followUp, nextUnwatched].compactMap { $0 }
            await queue.wakeup.wait(until: wake.min())
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
