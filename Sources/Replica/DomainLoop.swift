import SyncEngine

/// The rules of a domain's sync loop while the daemon runs, as a value with no clock, no
/// sleeping and no I/O: told the instant and what happened, it says what to do next, one
/// step at a time. `LiveSync` carries the steps out (waits, watches, runs passes, reports)
/// and answers the steps that ask a question.
///
/// A round begins with `begin(_:at:)`: what the watcher's queue and the user's controls
/// say, and the instant every deadline of the round counts from. The steps `checkRoot`,
/// `watch`, `collect` and `pass` are answered with `rootChecked(present:)`, `watched(_:)`,
/// `collected(_:firstSeen:nextDue:)` and `passFinished(_:)` or `passFailed(_:)`, which
/// return the next step; after any other step the carrier calls `next()`. `observe` ends
/// the round, `stop` ends the loop.
///
/// The rules, in the order a round applies them:
/// 1. The daemon stops: stop.
/// 2. The watcher says the sync folder is gone: stop watching it. Nothing syncs, and
///    nothing in it is taken as deleted, until it is back; each retry looks for it.
/// 3. Paused: wait until woken (events are still collected). A sync-now asked while
///    paused counts once resumed.
/// 4. Sync-now: the retry wait ends, and the next pass is full.
/// 5. Parked (a pass failed): wait until the retry (`RetryPolicy.parkedDomain`, capped at
///    `pollInterval`, doubling with each failure in a row).
/// 6. Folders the watch limit left unwatched are watched again and scanned every
///    `unwatchedRescanInterval`.
/// 7. A pass is full at the start, after a failure, a sync-now or the sync folder coming
///    back, every `rescanInterval`, every `pollInterval` when nothing watches the folder,
///    and when a follow-up is due; otherwise it looks at the paths that settled, or walks
///    the remote when `pollInterval` has passed. Paths settled when the poll is due pass
///    first, on their own, and the poll right after, before anything else settled is
///    taken: a pass over both would read every row (at a million items, a save would wait
///    a minute), and every write is guarded by its version either way. With nothing to
///    look at, wait until the first deadline: a path settling, the poll, the rescan, a
///    follow-up, a rewatch.
/// 8. After a pass: files still open for writing go back to the queue. Work left over is
///    followed up at once when the pass got somewhere or found conflicts to resolve (three
///    times in a row at most), otherwise after `pollInterval` or a minute, whichever is
///    shorter. A failure parks the domain; a `cannotSynchronize` one asks whether the sync
///    folder is gone.
public struct DomainLoop: Sendable {
    public typealias Instant = ContinuousClock.Instant

    /// What the loop is told at the start of each round.
    public struct Observation: Sendable, Equatable {
        /// The daemon is stopping.
        public var stopped: Bool
        /// The user paused the domain.
        public var paused: Bool
        /// The user asked for a pass now (a parked domain retries now).
        public var syncNow: Bool
        /// Why the sync folder is gone, when the watcher said so since the last round.
        public var rootGone: String?
        /// Folders the watcher could not watch since the last round, with the errno.
        public var unwatched: [RemotePath: Int32]

        public init(stopped: Bool = false, paused: Bool = false, syncNow: Bool = false, rootGone: String? = nil,
                    unwatched: [RemotePath: Int32] = [:]) {
            self.stopped = stopped
            self.paused = paused
            self.syncNow = syncNow
            self.rootGone = rootGone
            self.unwatched = unwatched
        }
    }

    /// What the loop needs to know of a pass that ran to its end.
    public struct PassOutcome: Sendable, Equatable {
        /// The steps the plan had; 0: both sides already agreed.
        public var steps: Int
        public var succeeded: Int
        /// Steps whose guard found the other side changed (a conflict to resolve).
        public var resolved: Int
        /// Every step succeeded: nothing is left for a follow-up.
        public var complete: Bool
        /// Paths a writer still held open (with whether their subtree was to be scanned).
        public var heldBack: [RemotePath: Bool]
        /// A step's failure parked the whole domain.
        public var parked: ProviderError?

        public init(steps: Int = 0, succeeded: Int = 0, resolved: Int = 0, complete: Bool = true,
                    heldBack: [RemotePath: Bool] = [:], parked: ProviderError? = nil) {
            self.steps = steps
            self.succeeded = succeeded
            self.resolved = resolved
            self.complete = complete
            self.heldBack = heldBack
            self.parked = parked
        }

        public init(_ result: PassResult) {
            self.init(steps: result.steps, succeeded: result.report.succeeded, resolved: result.report.resolved,
                      complete: result.report.completes(result.steps), heldBack: result.heldBack,
                      parked: result.report.parked)
        }
    }

    /// What to do next.
    public enum Step: Sendable, Equatable {
        /// The daemon is stopping: leave the loop.
        case stop
        /// The round is over: begin the next one with `begin(_:at:)`.
        case observe
        /// Wait until `until` or a wake-up, whichever comes first (nil: a wake-up only).
        case wait(until: Instant?)
        /// The sync folder is gone (`reason`): stop watching it and say so.
        case unwatch(reason: String)
        /// Look whether the sync folder is there; answer with `rootChecked(present:)`.
        case checkRoot
        /// The sync folder is back: watch it again; answer with `watched(_:)`.
        case watch
        /// Watch these folders again (the limit may have been raised) and queue them for a scan.
        case rewatch(Set<RemotePath>)
        /// Take the settled changes from the queue (with `everything`, all that waits, due
        /// or not); answer with `collected(_:firstSeen:nextDue:)`.
        case collect(everything: Bool)
        /// Run a pass over `scope`; answer with `passFinished(_:)` or `passFailed(_:)`.
        case pass(PassScope)
        /// Give paths a writer still holds back to the queue, first seen at `firstSeen`.
        case putBack([RemotePath: Bool], firstSeen: Instant)
        /// The domain cannot sync (`error`): say so; the loop tries again at `retryAt`.
        case park(ProviderError, retryAt: Instant)
        /// The sync folder is still missing: say so; the loop looks again at `retryAt`.
        case missingRoot(retryAt: Instant)
    }

    /// The kind of pass a round decided on, kept until the pass is answered.
    struct Round: Sendable {
        var full: Bool
        var remoteDue: Bool
        var fullScan = false
        var firstSeen: Instant?
    }

    public let timing: Timing
    /// The instant the current round began: every deadline it sets counts from it.
    public private(set) var now: Instant
    /// Folders the watch limit left unwatched, waiting for their next try.
    public private(set) var unwatched: Set<RemotePath> = []
    /// True while a watcher reports the folder's changes.
    public private(set) var watching: Bool

    private var needFull = true
    private var nextRemote: Instant
    private var nextRescan: Instant
    private var followUp: Instant?
    private var retryAt: Instant?
    /// Failed passes in a row, for the retry's backoff.
    private var failures = 0
    /// True when the last pass left work to do at once (a conflict or a vanished item to
    /// look at again), so the loop is not quiet although nothing waits in the queue.
    public var followsUpAtOnce: Bool { followUp.map { $0 <= now } ?? false }
    /// True when the last pass left work for a pass within `soon` (at once, or after the
    /// short waits for a server still changing: see `followUpTime`), so a loop that is
    /// about to look again is not taken for quiet.
    public var followsUpSoon: Bool { followUp.map { $0 <= now + Self.soon } ?? false }
    static let soon = Duration.seconds(10)
    private var nextUnwatched: Instant?
    private var rootGone = false
    /// Passes in a row that left conflicts to resolve.
    private var resolving = 0
    private var stopped = false
    /// A poll was due when the last pass looked at settled paths only: the next round
    /// walks the remote before it takes anything else from the queue.
    private var pollOwed = false
    private var paused = false
    private var syncNow = false

    /// True from `begin` until a step ends the round.
    private var open = false
    private var unwatchReason: String?
    private var rootPresent: Bool?
    private var round: Round?
    /// Steps decided together (after a pass), handed out one by one by `next()`.
    private var pending: [Step] = []

    /// A loop that starts at `start` with a full pass.
    public init(timing: Timing, start: Instant, watching: Bool) {
        self.timing = timing
        self.watching = watching
        now = start
        nextRemote = start
        nextRescan = start + timing.rescanInterval
    }

    /// Begins a round at `now` with what happened since the last one.
    public mutating func begin(_ observation: Observation, at now: Instant) -> Step {
        self.now = now
        open = true
        stopped = observation.stopped
        paused = observation.paused
        syncNow = syncNow || observation.syncNow
        if let reason = observation.rootGone {
            unwatchReason = reason
            rootGone = true
        }
        if !observation.unwatched.isEmpty {
            unwatched.formUnion(observation.unwatched.keys)
            nextUnwatched = nextUnwatched ?? now + timing.unwatchedRescanInterval
        }
        return next()
    }

    /// The step after one that asks no question.
    public mutating func next() -> Step {
        if !pending.isEmpty { return pending.removeFirst() }
        return open ? decide() : .observe
    }

    /// The answer to `checkRoot`.
    public mutating func rootChecked(present: Bool) -> Step {
        if open {
            rootPresent = present
        } else if !present {
            rootGone = true  // asked after a failed pass: the next retry looks again
        }
        return next()
    }

    /// The answer to `watch`: whether the watcher started.
    public mutating func watched(_ started: Bool) -> Step {
        watching = started
        return next()
    }

    /// The answer to `collect`: what the queue gave, the earliest of those paths' first
    /// events, and when the next waiting path settles (nil: none waits).
    public mutating func collected(_ changes: SettledChanges, firstSeen: Instant?, nextDue: Instant?) -> Step {
        guard var round else { preconditionFailure("collected(_:) answers a collect step") }
        self.round = nil
        guard round.full || round.remoteDue || !changes.isEmpty else {
            let deadlines = [nextRemote, nextRescan] + [nextDue, followUp, nextUnwatched].compactMap { $0 }
            return end(.wait(until: deadlines.min()))
        }
        round.fullScan = changes.fullScan
        round.firstSeen = firstSeen
        // (A change of the whole root reads every row anyway: one pass.)
        if !round.full, round.remoteDue, !changes.fullScan, !changes.isEmpty, changes.paths[.root] != true {
            round.remoteDue = false
            pollOwed = true
        }
        self.round = round
        return .pass(round.full ? .full : .watched(changes, remote: round.remoteDue))
    }

    /// The answer to `pass`: the pass ran to its end.
    public mutating func passFinished(_ outcome: PassOutcome) -> Step {
        guard let round else { preconditionFailure("passFinished(_:) answers a pass step") }
        self.round = nil
        open = false
        if !outcome.heldBack.isEmpty {
            pending.append(.putBack(outcome.heldBack, firstSeen: round.firstSeen ?? now))
        }
        if let parked = outcome.parked {
            park(parked)
            return next()
        }
        if round.full || round.fullScan {
            needFull = false
            nextRescan = now + timing.rescanInterval
        }
        if round.full || round.remoteDue || round.fullScan { nextRemote = now + timing.pollInterval }
        // Only a full pass looked at everything a follow-up is for: a pass over some paths,
        // or a poll, leaves an earlier pass's follow-up (a failed upload's retry) standing.
        let whole = round.full || round.fullScan
        if outcome.steps > 0 && !outcome.complete {
            let time = followUpTime(after: outcome)
            followUp = whole ? time : min(followUp ?? time, time)
        } else if whole {
            followUp = nil
            resolving = 0
        }
        failures = 0
        return next()
    }

    /// The answer to `pass`: the pass failed with `error` (whatever its disposition, the
    /// domain parks: nothing is decided from a partial view).
    public mutating func passFailed(_ error: ProviderError) -> Step {
        round = nil
        open = false
        park(error)
        return next()
    }

    // MARK: Rules

    private mutating func decide() -> Step {
        if stopped { return .stop }
        if let reason = unwatchReason {
            unwatchReason = nil
            watching = false
            return .unwatch(reason: reason)
        }
        if paused { return end(.wait(until: nil)) }
        if syncNow {
            syncNow = false
            retryAt = nil
            needFull = true
        }
        if let retryAt, now < retryAt { return end(.wait(until: retryAt)) }
        retryAt = nil
        if rootGone { return lookForRoot() }
        if let due = nextUnwatched, due <= now, watching {
            defer { unwatched = [] }
            nextUnwatched = nil
            return end(.rewatch(unwatched))
        }
        let remoteDue = now >= nextRemote
        let full = needFull || !watching && remoteDue || now >= nextRescan || followUp.map { $0 <= now } ?? false
        if full {
            pollOwed = false  // a full pass walks the remote too
        } else if remoteDue && pollOwed {
            pollOwed = false
            round = Round(full: false, remoteDue: true)
            return .pass(.watched(SettledChanges(), remote: true))
        }
        round = Round(full: full, remoteDue: remoteDue)
        return .collect(everything: full)
    }

    /// The sync folder was gone: ask whether it is back; watch it again and scan it all
    /// when it is, wait for the next retry when it is not.
    private mutating func lookForRoot() -> Step {
        guard let present = rootPresent else { return .checkRoot }
        rootPresent = nil
        guard present else {
            let retry = now + timing.retry.delay(afterFailures: failures)
            retryAt = retry
            return end(.missingRoot(retryAt: retry))
        }
        rootGone = false
        needFull = true
        return .watch
    }

    /// Work is left: at once when this pass got somewhere or a guard found the server
    /// changed (a conflict to resolve with a fresh look at it, three times in a row at
    /// most); a server still changing after that (lighttpd serves a file changed behind its
    /// back at its old length for a second) is looked at again after 1 s, 2 s, 4 s… up to
    /// the poll interval or a minute; otherwise when the failed items' backoff allows.
    private mutating func followUpTime(after outcome: PassOutcome) -> Instant {
        resolving = outcome.resolved > 0 ? resolving + 1 : 0
        let promptly = outcome.succeeded > 0 || (outcome.resolved > 0 && resolving <= 3)
        if promptly { return now }
        let longest = min(timing.pollInterval, .seconds(60))
        guard outcome.resolved > 0 else { return now + longest }
        return now + min(longest, .seconds(1 << min(resolving - 4, 6)))
    }

    private mutating func park(_ error: ProviderError) {
        failures += 1
        let retry = now + timing.retry.delay(afterFailures: failures)
        retryAt = retry
        pending.append(.park(error, retryAt: retry))
        // What settled was not synced: the next pass looks at everything.
        needFull = true
        if error.code == .cannotSynchronize { pending.append(.checkRoot) }
    }

    /// Ends the round with `step`.
    private mutating func end(_ step: Step) -> Step {
        open = false
        return step
    }
}

extension DomainLoop {
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
        /// How long a parked domain waits before trying again: 5 s doubling, at most
        /// 5 min or `pollInterval`.
        public var retry: RetryPolicy { RetryPolicy.parkedDomain.capped(at: pollInterval) }
    }
}
