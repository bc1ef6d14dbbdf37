/// What the service manager is told next: READY=1 once every domain's first pass is done, a
/// STATUS= line when the line changes, and when each may be sent. Pure: the caller looks
/// when the domains changed, sends what `next` says and reports back with `sent`.
///
/// Messages are rate-limited: at most one per `minimumGap`, so a burst of changes (a plan's
/// steps ending one by one) becomes one line. A message that could not be sent is tried
/// again after a delay that doubles up to `longestRetry`.
public struct ServiceAnnouncer: Sendable, Equatable {
    /// One datagram for the service manager.
    public struct Announcement: Sendable, Equatable {
        /// True when it carries READY=1.
        public var ready: Bool
        /// The STATUS= line it carries, if any.
        public var status: String?

        /// The datagram's text: "READY=1", "STATUS=…" or both, one per line.
        public var text: String {
            ((ready ? ["READY=1"] : []) + (status.map { ["STATUS=" + $0] } ?? [])).joined(separator: "\n")
        }
    }

    /// What to do now.
    public enum Decision: Sendable, Equatable {
        /// The service manager knows everything: wait for the next change.
        case nothing
        /// Something is new but the last message went out too recently (or failed): look
        /// again at this instant.
        case wait(until: ContinuousClock.Instant)
        case send(Announcement)
    }

    /// Shortest time between two messages.
    public static let minimumGap: Duration = .seconds(1)
    /// Longest wait before a failed message is tried again.
    public static let longestRetry: Duration = .seconds(60)

    private var toldReady = false
    private var shownLine: String?
    private var lastAttempt: ContinuousClock.Instant?
    private var failures = 0

    public init() {}

    /// The decision for `domains` as they are at `now`.
    public func next(for domains: [(name: String, snapshot: DomainMonitor.Snapshot)],
                     now: ContinuousClock.Instant) -> Decision {
        let ready = !toldReady && !domains.isEmpty && domains.allSatisfy(\.snapshot.firstPassDone)
        let line = ServiceStatusLine.text(for: domains)
        let status = line == shownLine ? nil : line
        guard ready || status != nil else { return .nothing }
        if let lastAttempt, now < lastAttempt + delay { return .wait(until: lastAttempt + delay) }
        return .send(Announcement(ready: ready, status: status))
    }

    /// `announcement` was sent at `now`; `delivered` is false when the send failed.
    public mutating func sent(_ announcement: Announcement, delivered: Bool, at now: ContinuousClock.Instant) {
        lastAttempt = now
        guard delivered else {
            failures += 1
            return
        }
        failures = 0
        toldReady = toldReady || announcement.ready
        shownLine = announcement.status ?? shownLine
    }

    /// How long after the last attempt the next may go.
    private var delay: Duration {
        min(Self.longestRetry, Self.minimumGap * (1 << min(failures, 6)))
    }
}
