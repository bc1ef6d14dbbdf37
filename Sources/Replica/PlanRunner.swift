// Journal contract: every step of a plan that does I/O is written to the engine's journal
// (`OperationJournal`), in one transaction for the whole plan, before the first step
// starts; the step's own result transaction completes it. After a crash, what is left in
// the journal is cleaned up (`recover`: the temporary files it names are removed) and the
// next plan decides again from the three states, which is why every step is guarded and a
// replay is idempotent.
// Steps that failed stay in the journal with a backoff (`attempts`, `not_before`, decided by
// the engine's `FailureBooking`): they are the domain's items in error.

import Foundation
import Logging
import SyncEngine
import SystemCalls

/// Carries a reconciliation plan out: remote steps through the engine, local steps through
/// the `LocalFolder`, up to `transfers` transfers at once in the order `PlanSchedule` allows
/// (and up to `finishing` more downloads making their bytes durable and recording them).
public final class PlanRunner: Sendable {
    public let provider: SyncProvider
    public let folder: LocalFolder
    public let transfers: Int
    let logger: Logger
    let stop: StopFlag
    /// Told what runs, for `tidesync status`; may hold new steps back (pause).
    let observer: (any PlanObserver)?
    /// How remote files are put in the folder (whole, or as placeholders): every download
    /// goes through it.
    public let placeholders: any PlaceholderPort
    /// Downloads are recorded a round at a time, in one transaction each (see `BatchRounds`).
    let downloadRecords: BatchRounds<SyncProvider.FileRecord, Result<ItemRecord, ProviderError>>

    /// A runner; `placeholders` defaults to `PlaceholdersOff` (whole files).
    public init(provider: SyncProvider, folder: LocalFolder, transfers: Int, logger: Logger, stop: StopFlag = StopFlag(),
                observer: (any PlanObserver)? = nil, placeholders: (any PlaceholderPort)? = nil) {
        self.provider = provider
        self.folder = folder
        self.placeholders = placeholders ?? PlaceholdersOff(folder: folder)
        self.transfers = max(1, transfers)
        self.logger = logger
        self.stop = stop
        self.observer = observer
        downloadRecords = BatchRounds(gap: Self.roundGap) { files in provider.record(files) }
    }

    /// The arguments of a journaled step, for recovery and for the list of items in error.
    struct JournalEntry: Codable {
        var step: String
        var path: RemotePath
        /// A temporary file of ours the step may leave behind.
        var temporary: String?
        /// The token of the remote temporaries of a bundle write (`BundleScratch`), beside `path`.
        var scratch: String?
        /// The version the bundle write replaces (nil for a create), for the clean-up.
        var base: ETag?
    }

    /// What a pass needs besides the plan.
    public struct Context: Sendable {
        /// The remote listing the plan was made from.
        public var remote: [RemotePath: RemoteEntry]
        /// The state DB's records by path when the plan was made.
        public var recorded: [RemotePath: ItemRecord]
        /// Earlier failures by path (journal entries with attempts), from `recover()`.
        public var failures: [RemotePath: PendingOperation]
        /// Steps not to run this time (held back by the mass-delete guard); what needs them
        /// waits too.
        public var withheld: Set<Int>

        public init(remote: [RemotePath: RemoteEntry], recorded: [RemotePath: ItemRecord],
                    failures: [RemotePath: PendingOperation], withheld: Set<Int> = []) {
            self.remote = remote
            self.recorded = recorded
            self.failures = failures
            self.withheld = withheld
        }
    }

    /// Runs `plan` (in `Reconciler.plan` order). Throws only when the journal cannot be
    /// written; step failures are in the report.
    public func run(_ plan: [SyncAction], context: Context) async throws(ProviderError) -> RunReport {
        guard !plan.isEmpty else { return RunReport() }
        let temporaries: [URL?] = plan.map { temporaryURL(for: $0, remote: context.remote) }
        let scratches: [String?] = plan.map { $0.setsAsideRemotely(folder.bundles, recorded: context.recorded) ? UUID().uuidString : nil }
        let operations = try journal(plan, temporaries: temporaries, scratches: scratches)
        var schedule = PlanSchedule(plan)
        var report = RunReport()
        observer?.planStarted(plan.map { PlannedStep($0, remote: context.remote) })
        defer { observer?.planEnded() }
        let deferred = deferredSteps(of: plan, context: context, schedule: &schedule, report: &report)
        // Steps end, and plain downloads hand back their transfer slot before they end (see
        // `TransferSlot`), in any order: both come here, in the order they happened.
        let sink = StepEvents()
        await withDiscardingTaskGroup { group in
            var holding: Set<Int> = []  // steps holding a transfer slot
            var running = 0  // steps started and not ended
            var serverFailures = 0  // items the server failed in a row
            func startReady() {
                while holding.count < transfers, running < transfers + Self.finishing, report.parked == nil,
                      !stop.isStopped, !Task.isCancelled, observer?.holdsNewSteps != true, let index = schedule.next() {
                    guard schedule.outcomes[index] == nil else { continue }
                    let (step, operation, temporary, scratch) = (plan[index], operations[index], temporaries[index], scratches[index])
                    let progress = progressReporter(for: index)
                    observer?.stepStarted(index)
                    group.addTask {
                        do throws(ProviderError) {
                            try await self.perform(step, operation: operation, temporary: temporary, scratch: scratch,
                                                   context: context, progress: progress) { sink.yield(.released(index)) }
                            sink.yield(.ended(index, nil))
                        } catch {
                            sink.yield(.ended(index, self.explained(error, of: step)))
                        }
                    }
                    holding.insert(index)
                    running += 1
                }
            }
            startReady()
            while running > 0 {
                let event = await sink.next()
                guard case .ended(let index, let error) = event else {
                    if case .released(let index) = event, holding.remove(index) != nil { observer?.stepReleased(index) }
                    startReady()
                    continue
                }
                holding.remove(index)
                running -= 1
                observer?.stepEnded(index, succeeded: error == nil)
                if let error {
                    report.skipped += schedule.finished(index, .failed).count
                    handle(error, of: plan[index], operation: operations[index], temporary: temporaries[index],
                           scratch: scratches[index], context: context, report: &report)
                    // Items that failed before (a name the server never stores) back off on
                    // their own; only new failures tell that the server fails everything.
                    if error.code == .serverFailedItem, context.failures[plan[index].path] == nil { serverFailures += 1 }
                    if serverFailures == Self.serverFailuresToPark, report.parked == nil {
                        let parked = Self.failingServer(error)
                        report.parked = parked
                        logger.warning("\(parked.message)")
                    }
                } else {
                    serverFailures = 0
                    schedule.finished(index, .succeeded)
                    succeeded(plan[index], context: context, report: &report)
                }
                startReady()
            }
        }
        // Steps that never started hold nothing: their journal entries go.
        let unstarted = plan.indices.filter {
            schedule.outcomes[$0] == nil || schedule.outcomes[$0] == .skipped || deferred.contains($0)
        }
        report.skipped += plan.indices.filter { schedule.outcomes[$0] == nil }.count
        try provider.complete(unstarted.compactMap { operations[$0] })
        return report
    }

    /// Counts a step that succeeded; an earlier failure of its item is over.
    private func succeeded(_ step: SyncAction, context: Context, report: inout RunReport) {
        report.succeeded += 1
        if case .conflictCopy(let copy) = step { report.conflicts.append((copy.path, copy.copy)) }
        if let failure = context.failures[step.path] { try? provider.complete([failure.id]) }
    }

    /// The steps not to run this time (withheld by the mass-delete guard, or failed before and
    /// still backing off), marked failed in `schedule` with what needs them, and counted as
    /// skipped.
    private func deferredSteps(of plan: [SyncAction], context: Context, schedule: inout PlanSchedule,
                               report: inout RunReport) -> Set<Int> {
        let now = provider.clock.now()
        var deferred: Set<Int> = []
        for index in plan.indices {
            let backingOff = context.failures[plan[index].path].flatMap(\.notBefore).map { $0 > now } ?? false
            guard context.withheld.contains(index) || backingOff else { continue }
            deferred.insert(index)
            report.skipped += 1 + schedule.finished(index, .failed).count
        }
        return deferred
    }

    /// What happens to a running step, as the runner hears it.
    enum StepEvent: Sendable {
        /// The step no longer needs its transfer slot (a download's bytes are written).
        case released(Int)
        /// The step ended, with its error (already explained) when it failed.
        case ended(Int, ProviderError?)
    }

    /// The steps' events, in the order they happened, to one reader. Unlike an AsyncStream it
    /// is read to the end even when the runner's task is cancelled: every started step's end
    /// is handled (its journal entry, its temporary), as `group.next()` did before.
    final class StepEvents: @unchecked Sendable {
        private let lock = NSLock()
        private var buffered: [StepEvent] = []
        private var reader: CheckedContinuation<StepEvent, Never>?

        func yield(_ event: StepEvent) {
            lock.lock()
            guard let reader else {
                buffered.append(event)
                return lock.unlock()
            }
            self.reader = nil
            lock.unlock()
            reader.resume(returning: event)
        }

        /// The next event; waits for one.
        func next() async -> StepEvent {
            await withCheckedContinuation { continuation in
                lock.lock()
                guard buffered.isEmpty else {
                    let event = buffered.removeFirst()
                    lock.unlock()
                    return continuation.resume(returning: event)
                }
                reader = continuation
                lock.unlock()
            }
        }
    }

    /// How many steps may be finishing (their transfer over, their file being made durable,
    /// put in place and recorded) beside the `transfers` that hold a slot. They wait for
    /// rounds (`PlacementRounds`, `downloadRecords`) without holding a thread; the more of
    /// them, the larger a round: a 10 000-file download with `transfers` 4, rounds as soon
    /// as the one before ended, took 5.8 s with 64 here, 6.3 s with 16 (the round's time is
    /// what they wait for, a few milliseconds).
    static let finishing = 64

    /// The least time between the end of a round of downloads' placements or records
    /// (`BatchRounds`) and the beginning of the next: a 10 000-file download (`transfers` 4,
    /// `finishing` 64) took 5.8 s with rounds as soon as the one before ended (3.6 files a
    /// round), 5.2 s with 2 ms between them, 5.1 s with 3 ms and 5 ms; a download after a
    /// quiet spell is not held back.
    static let roundGap = Duration.milliseconds(3)

    /// How many items the server fails in a row (`serverFailedItem`, no success between)
    /// before the pass stops and the domain parks: one file the server cannot store backs
    /// off alone, a server failing everything is not sent one request per item.
    static let serverFailuresToPark = 3

    /// Why the domain parks after `serverFailuresToPark` server failures; `last` is the last.
    static func failingServer(_ last: ProviderError) -> ProviderError {
        ProviderError(.serverFailedItem,
                      "the server failed \(serverFailuresToPark) requests in a row (the last: \(last.message)); sync pauses and is tried again later",
                      underlying: last.underlying)
    }

    /// A step that failed because the user changed the sync folder under it is not an
    /// error to back off from: an upload whose file was written while it was sent (a save
    /// during the upload), a download whose folder was moved or deleted meanwhile. The
    /// next plan, made at once, decides again from what is there now.
    func explained(_ error: ProviderError, of step: SyncAction) -> ProviderError {
        guard error.code == .cannotSynchronize else { return error }
        switch step {
        case .upload(let path, _, let source, _) where folder.entry(at: path)?.stat != source:
            return changedSincePlan(path)
        case .download(let path, _, _, _), .compareContents(let path, _, _, _, _), .createLocalSymlink(let path, _, _, _):
            guard !path.parent.isRoot, folder.entry(at: path.parent)?.kind != .folder else { return error }
            return changedSincePlan(path)
        case .conflictCopy(let conflict) where folder.entry(at: conflict.copy)?.stat != conflict.local:
            // The copy (already made here and listed) was edited while it was sent: the
            // next plan uploads it as the new file it is.
            return changedSincePlan(conflict.copy)
        default:
            return error
        }
    }

    /// Passes a transfer's progress on to the observer as step `index`'s.
    private func progressReporter(for index: Int) -> TransferProgress? {
        guard let observer else { return nil }
        return { done, total in observer.transferProgressed(step: index, bytesDone: done, bytesTotal: total) }
    }

    private func journal(_ plan: [SyncAction], temporaries: [URL?], scratches: [String?]) throws(ProviderError) -> [Int64?] {
        let now = provider.clock.now()
        let indices = plan.indices.filter { plan[$0].doesIO }
        let encoder = JSONEncoder()
        let entries = indices.map { index in
            let entry = JournalEntry(step: plan[index].stepName, path: plan[index].path, temporary: temporaries[index]?.path,
                                     scratch: scratches[index], base: scratches[index] == nil ? nil : plan[index].replacedVersion)
            return PendingOperation(itemID: plan[index].itemID, kind: plan[index].stepName,
                                    payload: (try? encoder.encode(entry)) ?? Data(), createdAt: now)
        }
        let ids = try provider.journal(entries)
        var result = [Int64?](repeating: nil, count: plan.count)
        for (index, id) in zip(indices, ids) { result[index] = id }
        return result
    }

    /// Books a failed step: the domain parks, the item backs off, or the next plan decides.
    private func handle(_ error: ProviderError, of step: SyncAction, operation: Int64?, temporary: URL?, scratch: String?,
                        context: Context, report: inout RunReport) {
        // A download cut by the network or a stop keeps its part for the next attempt.
        if let temporary, !(LocalFolder.isResumablePart(temporary.lastPathComponent) && Self.keepsPart(error)) {
            removeTemporary(temporary.path)
        }
        // An entry naming remote scratch collections stays until `recoverRemote` has
        // cleaned them up (the step's own clean-up may not have reached the server).
        let booking = provider.booking(of: error, operation: operation, earlier: context.failures[step.path],
                                       keepingEntry: scratch != nil)
        switch booking.outcome {
        case .dropped where error.disposition == .parkDomain:
            report.parked = report.parked ?? error
            logger.warning("\(step.stepName) \(step.path): \(error.message)")
        case .dropped:
            report.resolved += 1
            logger.info("\(step.stepName) \(step.path): \(error.message)")
        case .backedOff(let attempts, let delay, _):
            report.failed.append((step.path, error))
            logger.warning("\(step.stepName) \(step.path) failed (attempt \(attempts), next try in \(delay.components.seconds) s): \(error.description)")
        }
        do { try provider.record(booking) } catch {
            logger.error("cannot record the failure of \(step.stepName) \(step.path): \(error.description)")
        }
    }
}

extension PlanRunner.JournalEntry {
    /// The entry `operation` carries; nil when its payload is not one.
    init?(_ operation: PendingOperation) {
        guard let entry = try? JSONDecoder().decode(Self.self, from: operation.payload) else { return nil }
        self = entry
    }
}
