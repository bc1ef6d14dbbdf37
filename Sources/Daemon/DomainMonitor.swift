import Control
import Foundation
import Replica
import StateDatabase
import SyncEngine
import Synchronization

/// The live state of one running domain, for `tidesync status`, the service manager's
/// STATUS= line, and the user's pause / resume / sync-now.
///
/// Isolation: the one owner of this state; every field is behind one `Mutex`. The domain's
/// run loop and its plan runner write (as `PlanObserver`), the control server and the
/// notifier read `snapshot()`. No call blocks on I/O while holding the lock. A change that
/// can alter the service's status line (phase, pause, first pass, the set of pending steps;
/// not byte progress) calls `onChange`, outside the lock.
public final class DomainMonitor: PlanObserver, Sendable {
    /// What the domain's loop is doing.
    public enum Phase: Sendable, Equatable {
        /// Opened (or being opened); no pass has finished.
        case starting
        /// Both sides agreed at the end of the last pass.
        case idle
        /// A pass is running, or the last one left work for the next.
        case syncing
        /// The domain cannot sync until `error` clears; the loop tries again at `retryAt`.
        case parked(ProviderError, since: Date, retryAt: Date)
    }

    /// One step of the current (or last) plan that has not succeeded yet.
    public struct PendingStep: Sendable, Equatable {
        public var step: PlannedStep
        public var since: Date
        /// True while it runs.
        public var running: Bool
        public var bytesDone: Int64
        public var bytesTotal: Int64?
        /// When its first byte moved.
        public var transferStartedAt: Date?
        /// Its bytes have all moved; it is being made durable and recorded (a download that
        /// handed its transfer slot back): running, but no longer a transfer.
        public var transferDone = false
    }

    /// A copy of the state at one moment.
    public struct Snapshot: Sendable, Equatable {
        public var phase: Phase = .starting
        /// Paused by the user (tidesync pause).
        public var paused = false
        /// The first pass finished (or failed): the service is ready.
        public var firstPassDone = false
        public var lastCompleteSync: Date?
        public var pending: [PendingStep] = []
        public var watcher = WatcherHealth()
        /// The last pass's sibling names that differ only in Unicode normalisation.
        public var normalisationTwins: [[RemotePath]] = []
        /// The deletions the last pass held back until the user confirms them.
        public var held: DeletionHold?
        /// The last merge after the domain was pointed at another remote, until a pass
        /// after it finds both sides in agreement.
        public var remoteChange: RemoteChange?
        /// Files on demand for a domain that asked for it: on, or why not; nil for mode off.
        public var filesOnDemand: String?
        /// With files on demand: the last reads that fetched bytes, oldest first.
        public var recentHydrations: [HydrationStatus] = []
        /// With files on demand: the reads waiting for their bytes now.
        public var hydrationsInFlight: [HydrationStatus] = []
        /// Files on demand runs (placeholders are made and hydrated).
        public var hydrating = false
    }

    /// What the hydrator reports for `status`.
    public struct Hydrations: Sendable {
        public var recent: [HydrationStatus]
        public var inFlight: [HydrationStatus]
    }

    /// The domain's name.
    public let name: String
    /// The user's confirmation of held deletions (`tidesync allow-deletions`), shared with
    /// the domain's passes; it outlives a reopened domain, as the monitor does.
    public let deletionRelease = DeletionRelease()
    private let state = Mutex(Record())
    /// Where the time of the last complete sync is kept across restarts; set once the domain opens.
    private let database = Mutex<StateDatabase?>(nil)
    private let wakeHandler = Mutex<(@Sendable () -> Void)?>(nil)
    /// Where `snapshot` reads the last hydrations from (the hydrator keeps them).
    private let hydrations = Mutex<(@Sendable () -> Hydrations)?>(nil)
    private let openFiles = Mutex<DomainFiles?>(nil)
    private let onChange: @Sendable () -> Void
    /// Ends `wait` early: on sync-now and when its stop flag is set.
    private let retryWakeup = Wakeup()

    private struct Record {
        var snapshot = Snapshot()
        /// The plan's steps by index; nil once they succeeded or failed.
        var steps: [Int: PendingStep] = [:]
        var wakeRequested = false
        var lastPersisted: Date?
        /// The stop flag `wait` has told to wake it, once it has.
        var waitStop: ObjectIdentifier?
    }

    /// `onChange` is called (on the caller's thread, without a lock held) after a change
    /// that can alter the status line.
    public init(name: String, onChange: @escaping @Sendable () -> Void = {}) {
        self.name = name
        self.onChange = onChange
    }

    /// The current state.
    public func snapshot() -> Snapshot {
        var snapshot = state.withLock { record in
            var snapshot = record.snapshot
            snapshot.pending = record.steps.keys.sorted().compactMap { record.steps[$0] }
            return snapshot
        }
        let reported = hydrations.withLock { $0 }?()
        snapshot.recentHydrations = reported?.recent ?? []
        snapshot.hydrationsInFlight = reported?.inFlight ?? []
        snapshot.hydrating = reported != nil
        return snapshot
    }

    /// Gives the monitor the domain's state DB, to keep the last complete sync in.
    func attach(_ state: StateDatabase) {
        let last = try? state.summary().lastCompleteSync
        database.withLock { $0 = state }
        self.state.withLock { record in
            record.snapshot.lastCompleteSync = record.snapshot.lastCompleteSync ?? last
            record.lastPersisted = last
        }
    }

    /// Shows the last hydrations `source` gives (nil: none, files on demand is not running).
    func setHydrations(_ source: (@Sendable () -> Hydrations)?) {
        hydrations.withLock { $0 = source }
    }

    /// The running domain's files, for the file commands; nil while it is not running.
    var files: DomainFiles? { openFiles.withLock { $0 } }

    /// Gives the file commands the running domain's files (nil: it stopped).
    func attach(files: DomainFiles?) {
        openFiles.withLock { $0 = files }
    }

    /// Shows whether files on demand runs (nil: the domain did not ask for it).
    func setFilesOnDemand(_ sentence: String?) {
        state.withLock { $0.snapshot.filesOnDemand = sentence }
        onChange()
    }

    // MARK: The run loop's calls

    /// A pass starts. A parked domain shows its error until the pass proves it cleared.
    public func passStarted() {
        let changed = state.withLock { record -> Bool in
            switch record.snapshot.phase {
            case .parked, .syncing: return false
            case .starting, .idle:
                record.snapshot.phase = .syncing
                return true
            }
        }
        if changed { onChange() }
    }

    /// A pass ended with `result` (a parked report is followed by `parked`).
    public func passFinished(_ result: PassResult, now: Date = Date()) {
        let converged = result.steps == 0 || result.report.completes(result.steps)
        let persist = state.withLock { record -> Bool in
            record.snapshot.firstPassDone = true
            if let scope = result.twinsScope {
                // A watched pass saw only some folders: the twins elsewhere stay as they were.
                record.snapshot.normalisationTwins = record.snapshot.normalisationTwins.filter { group in
                    group.first.map { !scope.contains($0.parent) } ?? false && !result.normalisationTwins.contains(group)
                } + result.normalisationTwins
            } else {
                record.snapshot.normalisationTwins = result.normalisationTwins
            }
            record.snapshot.held = result.held
            if let change = result.remoteChange {
                record.snapshot.remoteChange = change
            } else if converged {
                record.snapshot.remoteChange = nil
            }
            guard result.report.parked == nil else { return false }
            record.snapshot.phase = converged ? .idle : .syncing
            guard converged else { return false }
            record.steps = [:]
            record.snapshot.lastCompleteSync = now
            // Kept on disk at most once a minute: it is for status after a restart.
            guard record.lastPersisted.map({ now.timeIntervalSince($0) >= 60 }) ?? true else { return false }
            record.lastPersisted = now
            return true
        }
        onChange()
        if persist, let database = database.withLock({ $0 }) { try? database.recordCompleteSync(at: now) }
    }

    /// The domain cannot sync now (`error`); the loop retries after `delay`.
    public func parked(_ error: ProviderError, retryIn delay: Duration, now: Date = Date()) {
        state.withLock { record in
            let since: Date
            if case .parked(let previous, let start, _) = record.snapshot.phase, previous.code == error.code {
                since = start
            } else {
                since = now
            }
            let seconds = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
            record.snapshot.phase = .parked(error, since: since, retryAt: now.addingTimeInterval(seconds))
            record.snapshot.firstPassDone = true
        }
        onChange()
    }

    /// Waits for `duration`, or less when `stop` is set or `syncNow()` is called meanwhile
    /// (a sync-now is taken). Nothing runs while it waits: a timer ends it, or the stop
    /// flag's or sync-now's signal.
    public func wait(for duration: Duration, stop: StopFlag) async {
        let hook = state.withLock { record -> Bool in
            defer { record.waitStop = ObjectIdentifier(stop) }
            return record.waitStop != ObjectIdentifier(stop)
        }
        if hook { stop.onStop { [retryWakeup] in retryWakeup.signal() } }
        let end = ContinuousClock.now + duration
        // A signal left from earlier (a sync-now the domain loop took) only makes it look again.
        while !stop.isStopped, ContinuousClock.now < end, !takeSyncNowRequest() {
            await retryWakeup.wait(until: end)
        }
    }

    // MARK: The user's calls

    /// Pauses or resumes: while paused no new step starts; running ones finish.
    public func setPaused(_ paused: Bool) {
        state.withLock { $0.snapshot.paused = paused }
        onChange()
        wakeHandler.withLock { $0 }?()
    }

    /// Ends the current wait: a pass starts now (a parked domain retries now).
    public func syncNow() {
        state.withLock { $0.wakeRequested = true }
        retryWakeup.signal()
        wakeHandler.withLock { $0 }?()
    }

    /// True (once) after `syncNow()`.
    public func takeSyncNowRequest() -> Bool {
        state.withLock { record in defer { record.wakeRequested = false }; return record.wakeRequested }
    }

    /// Called by `setPaused` and `syncNow` to end the run loop's wait.
    public func setWakeHandler(_ wake: @escaping @Sendable () -> Void) {
        wakeHandler.withLock { $0 = wake }
    }

    /// The watcher's health, as the watcher reports it.
    public func updateWatcher(_ health: WatcherHealth) {
        state.withLock { $0.snapshot.watcher = health }
    }

    // MARK: PlanObserver

    public var holdsNewSteps: Bool { state.withLock { $0.snapshot.paused } }

    public func planStarted(_ steps: [PlannedStep]) {
        let now = Date()
        state.withLock { record in
            var previous: [RemotePath: Date] = [:]
            for step in record.steps.values { previous[step.step.path] = step.since }
            record.steps = [:]
            for (index, step) in steps.enumerated() {
                record.steps[index] = PendingStep(step: step, since: previous[step.path] ?? now, running: false,
                                                  bytesDone: 0, bytesTotal: step.bytes, transferStartedAt: nil)
            }
            record.snapshot.firstPassDone = true
        }
        onChange()
    }

    public func stepStarted(_ index: Int) {
        state.withLock { $0.steps[index]?.running = true }
    }

    public func stepReleased(_ index: Int) {
        state.withLock { $0.steps[index]?.transferDone = true }
    }

    public func transferProgressed(step index: Int, bytesDone: Int64, bytesTotal: Int64?) {
        let now = Date()
        state.withLock { record in
            guard var step = record.steps[index] else { return }
            step.running = true
            step.transferStartedAt = step.transferStartedAt ?? now
            step.bytesDone = bytesDone
            step.bytesTotal = bytesTotal ?? step.bytesTotal
            record.steps[index] = step
        }
    }

    public func stepEnded(_ index: Int, succeeded: Bool) {
        if state.withLock({ $0.steps.removeValue(forKey: index) }) != nil { onChange() }
    }

    public func planEnded() {
        state.withLock { record in
            for (index, var step) in record.steps {
                step.running = false
                step.transferStartedAt = nil
                step.bytesDone = 0
                record.steps[index] = step
            }
        }
    }
}

/// The monitor as the domain loop's observer.
struct MonitorObserver: LiveSyncObserver {
    let monitor: DomainMonitor
    /// Told of each pass, to make the thumbnails of new image placeholders.
    var thumbnails: ThumbnailMaker?

    func passStarted() { monitor.passStarted() }
    func passFinished(_ result: PassResult) {
        monitor.passFinished(result)
        thumbnails?.passFinished(steps: result.steps)
    }
    func parked(_ error: ProviderError, retryIn delay: Duration) { monitor.parked(error, retryIn: delay) }
    func watcherChanged(watches: Int?, overflowRescans: Int, unwatched: Int) {
        monitor.updateWatcher(WatcherHealth(watchesInUse: watches, overflowRescans: overflowRescans, watchLimitReached: unwatched > 0))
    }
    var isPaused: Bool { monitor.snapshot().paused }
    func takeSyncNowRequest() -> Bool { monitor.takeSyncNowRequest() }
    func setWakeHandler(_ wake: @escaping @Sendable () -> Void) { monitor.setWakeHandler(wake) }
}
