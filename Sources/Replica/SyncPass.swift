import Glibc
import Foundation
import Logging
import SyncEngine

/// What one pass did.
public struct PassResult: Sendable {
    /// The steps the plan had; 0 means both sides already agreed.
    public var steps: Int
    public var report: RunReport
    /// Local names the scan could not sync (not UTF-8, too long), with why.
    public var skippedNames: [(path: String, reason: String)]
    /// Settled paths not looked at yet because a writer still holds them open (with
    /// whether their subtree was to be scanned); the watcher's queue takes them back.
    public var heldBack: [RemotePath: Bool] = [:]
    /// Folders this pass could not read, on either side: nothing below them was planned.
    public var unreadable: [UnreadableFolder] = []
    /// Sibling names that differ only in Unicode normalisation (NFC `café`, NFD `café`),
    /// each group in byte order: both sides hold them as they are; `status` warns about them.
    public var normalisationTwins: [[RemotePath]] = []
    /// The folders whose names `normalisationTwins` covers when the pass looked at only
    /// some (a watched pass): twins elsewhere are as the last pass found them. Nil: all.
    public var twinsScope: Set<RemotePath>?
    /// The deletions this pass held back until the user confirms them; nil: none.
    public var held: DeletionHold?
    /// Set when this pass found the domain pointed at another remote and merged both trees.
    public var remoteChange: RemoteChange?
    /// False when nothing was planned because nothing could have changed: a watched pass
    /// with no settled path whose remote walk found nothing new (an idle poll).
    public var planned = true

    /// Logs what the pass passed over and, when it had steps, what it did.
    public func log(to logger: Logger) {
        for skipped in skippedNames { logger.warning("not synced: \(skipped.path): \(skipped.reason)") }
        guard steps > 0 else { return }
        logger.info("pass done: \(report.succeeded) step(s) done, \(report.failed.count) failed, \(report.skipped) left for later, \(report.conflicts.count) conflict copies")
    }
}

/// One reconciliation of a domain: clean up after earlier passes, scan the sync folder,
/// walk the remote, decide three ways per item, and carry the plan out.
public struct SyncPass: Sendable {
    public let runner: PlanRunner
    public let scanner: LocalScanner
    /// This machine's name, for conflict-copy names.
    public let host: String
    /// Holds back a pass's deletions when there are too many; nil: never.
    public let massDelete: MassDeleteGuard?
    /// The remote the domain is configured with, checked against the state DB before each
    /// pass that walks the remote; nil: not checked.
    public let remote: RemoteBinding?
    /// The user's confirmation of held deletions.
    public let release: DeletionRelease
    let logger: Logger

    /// - Parameter massDelete: the guard of large deletions; nil (`--allow-mass-delete`)
    ///   also lets a pass empty a side without asking.
    public init(runner: PlanRunner, scanner: LocalScanner, host: String = SyncPass.hostName(),
                massDelete: MassDeleteGuard? = nil, remote: RemoteBinding? = nil,
                release: DeletionRelease = DeletionRelease(), logger: Logger) {
        self.runner = runner
        self.scanner = scanner
        self.host = host
        self.massDelete = massDelete
        self.remote = remote
        self.release = release
        self.logger = logger
    }

    /// Runs one pass over `scope`. Throws when a side cannot be read (the sync folder is
    /// missing, the server is unreachable): nothing is decided from a partial view.
    public func run(_ scope: PassScope = .full) async throws(ProviderError) -> PassResult {
        let clock = ContinuousClock()
        var phases: [(String, Duration)] = []
        var mark = clock.now
        func lap(_ name: String) {
            phases.append((name, clock.now - mark))
            mark = clock.now
        }
        defer {
            logger.debug("pass phases (\(scope.label)): \(phases.map { "\($0.0) \(Int($0.1.components.attoseconds / 1_000_000_000_000_000) + Int($0.1.components.seconds) * 1000) ms" }.joined(separator: ", "))")
        }
        let remoteChange = scope.walksRemote ? try await checkRemoteIdentity() : nil
        // After a switch no row describes the local side: it must be scanned whole.
        let scope: PassScope = remoteChange == nil ? scope : .full
        try await runner.recoverRemote(host: host)
        let failures = try runner.recover()
        lap("recover")
        let unreadableBefore = unreadableBefore()
        let widened = Self.widened(scope, by: unreadableBefore)
        let generation = runner.provider.rowsGeneration()
        let shortcut = try await walkFirst(widened, switched: remoteChange != nil, unreadableBefore: !unreadableBefore.isEmpty,
                                           failedBefore: !failures.isEmpty)
        if let lapped = shortcut.lap { lap(lapped) }
        if let done = shortcut.done { return done }
        let listing = shortcut.listing
        let (base, recorded, scoped, read) = try records(for: widened)
        var observed = read
        let parts = resumableParts(observed.temporaries, scope: scope)
        if widened.isFull { recordBirthTimes(observed.local, recorded: recorded) }
        lap("local scan")
        let walked = try await remoteSide(scope, base: base, recorded: recorded, listing: listing, observed: &observed)
        lap("remote walk")
        // Excluded names are never synced either way; a record that an exclude pattern
        // now covers is forgotten, so a new pattern never reads as deletions.
        let excluded = scanner.exclude.excluded(among: walked.remote.keys)
        var remote = excluded.isEmpty ? walked.remote : walked.remote.filter { !excluded.contains($0.key) }
        let unreadable = settleUnreadable(local: observed.unreadable, remote: walked.unlisted, before: unreadableBefore)
        let unknown = Self.unknownSubtrees(unreadable, local: observed.local, recorded: recorded)
        Self.takeAsRecorded(unknown, local: &observed.local, remote: &remote, recorded: recorded)
        let twins = normalisationTwins(remote: remote, local: observed.local, recorded: recorded)
        let twinsScope = scoped.map { Self.listedFolders($0, recorded: recorded, local: observed.local) }
        let quiet = walked.quiet && Self.touchesNothing(widened) && unreadable.isEmpty && Self.versionsKnown(base)
        // Nothing walked changed and every item is where and as the rows say (the usual full
        // pass): the planner would find nothing to do, so it is not run over every row.
        let agreed = !quiet && walked.quiet && unreadable.isEmpty && Self.versionsKnown(base)
            && Reconciler.agrees(observed.local, with: recorded)
        // Either way the listing agreed with the rows: the next poll listing the same reads none.
        if quiet || agreed { runner.provider.noteMatchedWalk(walked.digest, generation: generation) }
        let plan = quiet || agreed ? [] : plan(base: base, local: observed.local, remote: remote, recorded: recorded)
        lap(quiet ? "plan (nothing changed: skipped)" : agreed ? "plan (every item as recorded: skipped)" : "plan")
        runner.sweepParts(parts, plan: plan, remote: remote)
        if scope.isFull && scope.walksRemote { try runner.settle(failures, plan: plan) }
        guard !plan.isEmpty else {
            _ = release.admits(nil)
            record(held: nil)
            var result = PassResult(steps: 0, report: RunReport(), skippedNames: observed.skipped, heldBack: observed.heldBack,
                                    unreadable: unreadable, normalisationTwins: twins, remoteChange: remoteChange, planned: !quiet)
            result.twinsScope = twinsScope
            return result
        }
        logger.info("\(plan.count) step(s): \(Self.summary(of: plan))")
        var context = PlanRunner.Context(remote: remote, recorded: recorded, failures: failures)
        try checkRootBeforeDeletes(plan)
        let held = hold(plan, local: observed.local, remote: remote, recorded: context.recorded,
                        total: scoped?.total, unknown: unknown)
        if let held { context.withheld = Set(held.hold.steps) }
        record(held: held?.hold)
        var report = try await runner.run(plan, context: context)
        lap("apply")
        if let held { report.parked = report.parked ?? held.error }
        var result = PassResult(steps: plan.count, report: report, skippedNames: observed.skipped, heldBack: observed.heldBack,
                                unreadable: unreadable, normalisationTwins: twins, held: held?.hold, remoteChange: remoteChange)
        result.twinsScope = twinsScope
        return result
    }

    /// The resumable download parts among `temporaries`, which wait for the plan of a full
    /// pass (it removes those no step resumes; a partial pass leaves them to the next full
    /// one). Any other temporary is a leftover: a download's folder was moved away with its
    /// temporary inside, and the step that made it is over (passes do not overlap). An item
    /// a step set aside (`LocalFolder.asideName`) is settled instead (`settleAside`).
    func resumableParts(_ temporaries: [String], scope: PassScope) -> [String] {
        var parts: [String] = []
        for temporary in temporaries {
            if LocalFolder.isAside((temporary as NSString).lastPathComponent) {
                settleAside(temporary)
                continue
            }
            if LocalFolder.isResumablePart((temporary as NSString).lastPathComponent) {
                if scope.isFull && scope.walksRemote { parts.append(temporary) }
                continue
            }
            logger.info("removing the leftover temporary file \(temporary)")
            runner.removeTemporary(temporary)
        }
        return parts
    }

    /// Settles an item a crash left set aside (`LocalFolder+Aside.swift`): a placeholder's
    /// missing bytes, or the synced version as recorded for its name, go (the last look
    /// would have removed them); anything else — it may hold an edit — is put back under
    /// its name, or beside it when the name is taken.
    func settleAside(_ absolutePath: String) {
        let folder = runner.folder, provider = runner.provider
        guard let (aside, item) = folder.asidePaths(absolutePath) else { return }
        let record = (try? provider.itemID(at: item)).flatMap { $0 }.flatMap { try? provider.itemRecord($0) }
        let kind: ItemKind = folder.bundles.isBundle(name: item.name) ? .bundle : .file
        if folder.holdsUnfetchedBytes(aside) {
            logger.info("removing \(absolutePath): a placeholder set aside by a step a crash cut short")
        } else if let recorded = record?.local, let now = folder.asideStat(aside, kind: kind), now == recorded {
            logger.info("removing \(absolutePath): \(item) as last synced, set aside by a step a crash cut short")
        } else {
            if let restored = folder.restoreAside(absolutePath) {
                logger.warning("\(restored) was put back: a step a crash cut short had set it aside")
            }
            return
        }
        folder.removeAside(aside)
    }

    /// The remote as this pass takes it, with the folders the walk could not list: walked
    /// since the anchor, or as recorded for a pass that does not walk. A watched pass that
    /// walks also looks at the paths that changed on the server, whatever the watcher said.
    func remoteSide(_ scope: PassScope, base: RecordTree, recorded: [RemotePath: ItemRecord], listing: WalkedListing?,
                    observed: inout Observed) async throws(ProviderError)
        -> (remote: [RemotePath: RemoteEntry], unlisted: [RemotePath: ProviderError]?, quiet: Bool, digest: ListingDigest?) {
        guard scope.walksRemote else { return (Self.remoteAsRecorded(recorded), nil, true, nil) }
        let provider = runner.provider
        let batch = try await provider.changes(since: try provider.syncAnchor(), tree: base, walked: listing, context: listingContext)
        if case .watched = scope {
            let deleted = Set(batch.deleted)
            let touched = batch.updated.map(\.path) + recorded.filter { deleted.contains($0.value.id) }.map(\.key)
            overlay(touched, on: &observed, recorded: recorded)
        }
        // Quiet: nothing the plan would look at changed (excluded names never reach it).
        let quiet = batch.deleted.isEmpty && batch.unlisted.isEmpty && batch.updated.allSatisfy { scanner.exclude.excludes($0.path) }
        return (batch.snapshot, batch.unlisted, quiet, batch.listingDigest)
    }

    /// The result of an idle poll whose walk listed what the last walk agreeing with the rows
    /// listed (`SyncProvider.walkMatching`): what a quiet pass over every row gives,
    /// with no folder's names looked at (status keeps its name twins).
    func unchangedPoll() -> PassResult {
        _ = release.admits(nil)
        record(held: nil)
        var result = PassResult(steps: 0, report: RunReport(), skippedNames: [], planned: false)
        result.twinsScope = []
        return result
    }

    /// True for a watched pass in which the watcher settled no path: its local side is the
    /// state DB's rows as they are.
    static func touchesNothing(_ scope: PassScope) -> Bool {
        guard case .watched(let changes, _) = scope else { return false }
        return !changes.fullScan && changes.paths.isEmpty && changes.overdue.isEmpty
    }

    /// True when every item recorded but a folder has a known remote version: a row without
    /// one (a write whose result was not seen) is looked at by the planner, not passed over.
    static func versionsKnown(_ tree: RecordTree) -> Bool {
        tree.base.allSatisfy { $0.kind == .folder || $0.id == .root || $0.remoteETag != nil }
    }

    /// The reconciler's plan, after forgetting the records an exclude pattern now covers
    /// (a new pattern never reads as deletions) and those the bundle rule now reads as
    /// another kind (a folder that became a bundle, or back: both sides then hold it as
    /// new, and agree by comparing).
    func plan(base: RecordTree, local: [RemotePath: LocalObservation], remote: [RemotePath: RemoteEntry],
              recorded: [RemotePath: ItemRecord]) -> [SyncAction] {
        let excludedRecords = recorded.filter { path, record in
            !path.isRoot && (scanner.exclude.excludes(path) || (record.kind == .folder && isBundle(path))
                || (record.kind == .bundle && !isBundle(path)))
        }
        let covered = Set(excludedRecords.map(\.value.id))
        let kept = covered.isEmpty ? base : RecordTree(base.base.filter { !covered.contains($0.id) })
        let plan = Reconciler.plan(tree: kept, local: local, remote: remote, now: runner.provider.clock.now(), host: host)
        return excludedRecords.values.filter { !covered.contains($0.parentID ?? .root) }.map { SyncAction.forget($0.id) } + plan
    }

    /// True when the item at `path` is a bundle by the domain's rule.
    func isBundle(_ path: RemotePath) -> Bool {
        scanner.bundles.isBundle(name: path.name) && scanner.bundles.enclosingBundle(of: path) == nil
    }

    /// `3 upload, 1 download` — the plan's steps counted by kind.
    static func summary(of plan: [SyncAction]) -> String {
        var counts: [String: Int] = [:]
        for step in plan { counts[step.stepName, default: 0] += 1 }
        return counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
    }

    /// The short host name (up to the first dot), for conflict-copy names.
    public static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "linux" }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        let name = String(decoding: bytes, as: UTF8.self).split(separator: ".").first.map(String.init) ?? ""
        return name.isEmpty ? "linux" : name
    }

    /// rm -rf of the sync folder removes what is in it first and the folder last: a pass
    /// that scanned in between saw its items deleted. Before a plan that deletes anything on
    /// the server, the folder is looked at again (after the remote walk); gone or replaced,
    /// the pass stops and nothing is deleted there.
    func checkRootBeforeDeletes(_ plan: [SyncAction]) throws(ProviderError) {
        guard plan.contains(where: { if case .deleteRemote = $0 { true } else { false } }) else { return }
        try checkRoot(try runner.provider.itemRecord(.root))
    }
}
