import Control
import Foundation
import Replica
import StateDatabase
import SyncEngine
import TidesyncConfig

/// What a domain's state DB says, read for one status report.
public struct DatabaseFacts: Sendable {
    public var summary: DomainSummary
    /// Journal entries whose last attempt failed.
    public var failures: [PendingOperation]
    /// The newest conflicts, newest first.
    public var conflicts: [ConflictRecord]
    /// The folders the last pass could not read.
    public var unreadable: [UnreadableFolder] = []
    /// The deletions the last pass held back.
    public var held: DeletionHold.Summary?

    /// Reads the state DB at `path` read-only (it may be in use by the daemon).
    public static func read(path: String, conflicts limit: Int) -> Result<DatabaseFacts, ProviderError> {
        do throws(ProviderError) {
            let database = try StateDatabase(readOnlyPath: path)
            defer { try? database.close() }
            return .success(DatabaseFacts(summary: try database.summary(),
                                          failures: try database.pendingOperations().filter { $0.attempts > 0 },
                                          conflicts: try database.conflicts(limit: limit),
                                          unreadable: try database.unreadableFolders(),
                                          held: try database.heldDeletions()))
        } catch {
            return .failure(error)
        }
    }
}

extension DomainStatus {
    /// How many pending items, items in error and conflicts a report lists by name.
    public static let listed = 5

    /// The status of `domain` from what its loop reports (`live`, nil when the daemon is not
    /// running) and what its state DB holds. Pure: no clock, no I/O.
    public static func assemble(_ domain: DomainConfiguration, live: DomainMonitor.Snapshot?,
                                database: Result<DatabaseFacts, ProviderError>, now: Date) -> DomainStatus {
        var status = DomainStatus(name: domain.name, state: .notRunning, localFolder: domain.localPath,
                                  remote: domain.remote.description)
        let facts = try? database.get()
        if let facts {
            let summary = facts.summary
            status.counts = Counts(files: summary.files, folders: summary.folders, symlinks: summary.symlinks,
                                   bundles: summary.bundles, bytesOnDisk: summary.bytesOnDisk, bytesTotal: summary.bytesTotal)
            status.conflicts = ConflictSummary(count: summary.conflicts,
                                               newest: facts.conflicts.prefix(listed).map { ConflictEntry($0, domain: domain.name) })
            status.itemsInError = facts.failures.map(ItemInError.init)
            status.lastCompleteSync = summary.lastCompleteSync
            if !facts.unreadable.isEmpty {
                status.unreadableFolders = facts.unreadable.map {
                    UnreadableFolderStatus(path: $0.path.description, side: $0.side.rawValue, reason: $0.reason)
                }
            }
        }
        status.describeFilesOnDemand(live, summary: facts?.summary)
        guard let live else {
            // Without the daemon, `allow-deletions` has no one to tell: a run does it.
            status.heldDeletions = facts?.held.map {
                HeldDeletions(reason: $0.reason.rawValue, side: $0.side.rawValue, items: $0.items,
                              release: "tidesync run --once --allow-mass-delete")
            }
            if case .failure(let error) = database {
                status.error = ErrorInfo(code: error.code.rawValue, message: error.message)
            }
            return status
        }
        status.lastCompleteSync = live.lastCompleteSync ?? status.lastCompleteSync
        status.watcher = live.watcher
        status.heldDeletions = live.held.map {
            HeldDeletions(reason: $0.reason.rawValue, side: $0.side.rawValue, items: $0.items,
                          release: "tidesync allow-deletions \(domain.name)")
        }
        status.remoteChanged = live.remoteChange?.message(domain: domain.name)
        (status.state, status.paused, status.error) = state(of: live)
        if live.watcher.watchLimitReached, status.error == nil {
            status.error = ErrorInfo(code: "watchLimitReached",
                                     message: "the inotify watch limit is reached; raise fs.inotify.max_user_watches (see `man tidesync`)")
        }
        let reason = pendingReason(live)
        let waiting = live.pending.sorted { ($0.since, $0.step.path) < ($1.since, $1.step.path) }
        status.pending = PendingSummary(count: waiting.count, oldest: waiting.prefix(listed).map {
            PendingItem(path: $0.step.path.description, step: $0.step.step, since: $0.since,
                        reason: $0.running ? "running" : reason)
        })
        if !live.normalisationTwins.isEmpty {
            status.normalisationTwins = live.normalisationTwins.map { NameTwins(paths: $0.map(\.description)) }
        }
        status.transfers = live.pending.filter { $0.running && !$0.transferDone && $0.step.direction != nil }
            .map { transfer(of: $0, now: now) }
        return status
    }

    /// Files on demand: whether it runs, how many placeholders there are (when it runs, or
    /// placeholders are left from it) and the hydrations of a running domain.
    mutating func describeFilesOnDemand(_ live: DomainMonitor.Snapshot?, summary: DomainSummary?) {
        let dataless = summary?.dataless ?? 0, partial = summary?.partial ?? 0
        if live?.hydrating == true || dataless + partial > 0 {
            placeholders = PlaceholderCounts(dataless: dataless, partial: partial)
        }
        guard let live else { return }
        filesOnDemand = live.filesOnDemand
        recentHydrations = live.recentHydrations.isEmpty ? nil : live.recentHydrations
        hydrationsInFlight = live.hydrationsInFlight.isEmpty ? nil : live.hydrationsInFlight
    }

    /// The state shown for a live domain.
    static func state(of live: DomainMonitor.Snapshot) -> (State, PauseInfo?, ErrorInfo?) {
        if live.paused {
            return (.paused, PauseInfo(by: "user", reason: "paused with `tidesync pause`; `tidesync resume` goes on"), nil)
        }
        switch live.phase {
        case .starting: return (.starting, nil, nil)
        case .idle: return (live.pending.isEmpty ? .idle : .syncing, nil, nil)
        case .syncing: return (.syncing, nil, nil)
        case .parked(let error, let since, let retryAt):
            let info = ErrorInfo(code: error.code.rawValue, message: error.message, since: since, nextRetry: retryAt)
            if error.code == .massDeletePaused {
                return (.paused, PauseInfo(by: "massDelete", reason: error.message), info)
            }
            return (.error, nil, info)
        }
    }

    /// Why the steps that are not running wait.
    static func pendingReason(_ live: DomainMonitor.Snapshot) -> String {
        if live.paused { return "paused" }
        switch live.phase {
        case .parked(let error, _, _): return error.code == .massDeletePaused ? "held" : "parked"
        default: return "queued"
        }
    }

    static func transfer(of step: DomainMonitor.PendingStep, now: Date) -> Transfer {
        let elapsed = step.transferStartedAt.map { now.timeIntervalSince($0) } ?? 0
        let rate: Double? = elapsed > 0.2 && step.bytesDone > 0 ? Double(step.bytesDone) / elapsed : nil
        let left: Double? = rate.flatMap { rate in step.bytesTotal.map { Double(max(0, $0 - step.bytesDone)) / rate } }
        return Transfer(path: step.step.path.description, direction: step.step.direction?.rawValue ?? "upload",
                        bytesDone: step.bytesDone, bytesTotal: step.bytesTotal, bytesPerSecond: rate,
                        secondsLeft: left, startedAt: step.transferStartedAt ?? now)
    }
}

extension ConflictEntry {
    /// `record` of the domain `domain`, as the protocol lists it.
    public init(_ record: ConflictRecord, domain: String) {
        self.init(domain: domain, original: record.original.description, copy: record.copy.description,
                  detectedAt: record.detectedAt, baseVersion: record.baseVersion?.value,
                  remoteVersion: record.remoteVersion?.value, localSize: record.local.size,
                  localModified: Date(timeIntervalSince1970: Double(record.local.modificationTimeNanoseconds) / 1e9))
    }
}

extension ItemInError {
    /// A journal entry that failed: its path and step come from the runner's payload.
    init(_ operation: PendingOperation) {
        struct Payload: Decodable {
            var step: String
            var path: RemotePath
        }
        let payload = try? JSONDecoder().decode(Payload.self, from: operation.payload)
        self.init(path: payload?.path.description ?? "(item \(operation.itemID?.description ?? "?"))",
                  step: payload?.step ?? operation.kind, attempts: operation.attempts,
                  lastError: operation.lastError ?? "", nextRetry: operation.notBefore)
    }
}
