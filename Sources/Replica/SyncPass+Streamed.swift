import SyncEngine

// A full pass in a domain where nothing changed — the daemon's start, the hourly backstop,
// `run --once` — is the usual case, and with the whole comparison it costs every row, every
// local item and every remote entry in memory at once (300 MiB and 4 s at 100 000 files).
// When the remote walk lists what the last walk agreeing with the rows listed, and no row
// changed since — or, rows changed, the walk compared with them folder by folder agrees
// (`SyncProvider.walkMatching`) — the remote is as recorded: only the sync folder can
// differ, and that is
// compared with the rows one folder at a time, in the scan's order, holding one folder's
// names and rows. What differs (edited, new, gone, moved while no daemon ran) is handed to
// a watched pass over those paths, as if the watcher had settled them, which reads the rows
// around them only; anything it cannot say for sure (an unreadable folder, a record an
// exclude pattern now covers, very many differences) leaves the pass to the whole
// comparison, as before.

/// What a full pass's folder-by-folder comparison saw besides the items that agree.
struct StreamedAgreement {
    /// The paths that differ from their rows, as the watcher would settle them: true when
    /// everything below is to be scanned too (a new folder, or one of another inode or kind).
    var changed: [RemotePath: Bool] = [:]
    var skipped: [(path: String, reason: String)] = []
    var temporaries: [String] = []
    var twins: [[RemotePath]] = []
    /// Rows recorded without a birth time whose file is there unchanged (`recordBirthTimes`).
    var births: [ItemIdentifier: LocalStat] = [:]
    /// How many rows were compared, the root's not counted.
    var rows = 0
}

extension SyncPass {
    /// More differences than this are left to the whole comparison: a watched pass over
    /// them would read most rows anyway.
    public static let streamedChangeLimit = 1000

    /// Compares the sync folder with the rows, folder by folder from the root, each folder's
    /// names and rows in byte order (not `String`'s order or equality, which take NFC and
    /// NFD spellings as one name). Nil when the whole comparison must decide: a folder could
    /// not be listed, a recorded item is now excluded, a folder became a bundle or back, no
    /// recorded item is left at the top (a side emptied), or more than `streamedChangeLimit`
    /// paths differ; nil too as soon as `giveUp` is set (the remote walk beside it found the
    /// remote changed: the whole comparison decides anyway).
    func streamedAgreement(giveUp: StopFlag? = nil) throws(ProviderError) -> StreamedAgreement? {
        let records = runner.provider
        try checkRoot(try records.itemRecord(.root))
        var seen = StreamedAgreement()
        var scan = LocalScan()  // collects what the folders' listings pass over
        var folders: [(path: RemotePath, id: ItemIdentifier)] = [(.root, .root)]
        while let folder = folders.popLast() {
            if giveUp?.isStopped == true { return nil }
            guard var entries = Self.listed(folder.path, by: scanner, into: &scan) else { return nil }
            entries.sort { $0.path.name.utf8.lexicographicallyPrecedes($1.path.name.utf8) }
            let rows = try records.children(of: folder.id)
            var (e, r, matched) = (0, 0, 0)
            while e < entries.count || r < rows.count {
                let entry = e < entries.count ? entries[e] : nil, row = r < rows.count ? rows[r] : nil
                if let entry, row == nil || entry.path.name.utf8.lexicographicallyPrecedes(row!.name.utf8) {
                    seen.changed[entry.path] = entry.kind == .folder  // new here
                    e += 1
                } else if let row, entry == nil || !entry!.path.name.utf8.elementsEqual(row.name.utf8) {
                    let path = try? folder.path.appending(row.name)
                    guard let path, !scanner.excludes(path) else { return nil }  // the whole comparison forgets it
                    seen.changed[path] = false  // gone
                    r += 1
                } else if let entry, let row {
                    // A folder the bundle rule now reads as a bundle, or back: the whole
                    // comparison forgets its record, so that both sides hold it as new.
                    guard (entry.kind == .bundle) == (row.kind == .bundle) else { return nil }
                    compare(entry, with: row, into: &seen, folders: &folders)
                    (e, r, matched) = (e + 1, r + 1, matched + 1)
                }
            }
            // Nothing recorded at the top is there: the sync folder was emptied (or a mount
            // is missing), which the whole comparison holds back rather than deleting.
            if folder.path.isRoot, !rows.isEmpty, matched == 0 { return nil }
            guard seen.changed.count <= Self.streamedChangeLimit else { return nil }
            seen.rows += rows.count
            let candidates = entries.compactMap { $0.path.name.utf8.contains { $0 >= 0x80 } ? $0.path : nil }
            if candidates.count > 1 { seen.twins += NormalisationClash.twins(among: candidates) }
        }
        seen.skipped = scan.skipped
        seen.temporaries = scan.temporaries
        return seen
    }

    /// The folder's items as the scan sees them; nil when it could not be read whole.
    static func listed(_ folder: RemotePath, by scanner: LocalScanner, into scan: inout LocalScan) -> [LocalScanEntry]? {
        guard let entries = try? scanner.list(folder, into: &scan), scan.unreadable.isEmpty else { return nil }
        // A folder that vanished since its parent was listed (moved meanwhile) lists nothing,
        // which is not an empty folder: the whole comparison sees the move whole.
        if entries.isEmpty, case .gone = LocalScanner.read(folder: scanner.absolute(folder)) { return nil }
        return entries
    }

    /// One item found under a recorded name: agreeing, its folder is compared next;
    /// otherwise it is a difference (to be scanned whole when it is a folder now).
    func compare(_ entry: LocalScanEntry, with row: ItemRecord, into seen: inout StreamedAgreement,
                 folders: inout [(path: RemotePath, id: ItemIdentifier)]) {
        guard row.kind == .folder || row.remoteETag != nil, Reconciler.agrees(Self.observation(entry), with: row) else {
            seen.changed[entry.path] = entry.kind == .folder
            return
        }
        if let stat = row.local, stat.birthNanoseconds == 0, entry.stat.birthNanoseconds != 0, entry.stat == stat {
            seen.births[row.id] = entry.stat
        }
        if row.kind == .folder { folders.append((entry.path, row.id)) }
    }

    /// The result of a full pass whose walk and folder agreed with every row
    /// (`streamedAgreement`): what the whole comparison gives when it plans nothing. With
    /// differences, the watched pass over them, with every folder's name twins and skipped
    /// names (a full pass reports them all).
    func agreedPass(_ seen: StreamedAgreement) async throws(ProviderError) -> PassResult {
        if !seen.births.isEmpty {
            do { try runner.provider.recordBirthTimes(seen.births) } catch {
                logger.warning("cannot record the birth times of \(seen.births.count) item(s): \(error.message)")
            }
        }
        // Set-aside items are settled and leftovers removed first; the watched pass, which
        // downloads nothing (the remote is as recorded), resumes no download part.
        let parts = resumableParts(seen.temporaries, scope: .full)
        defer { runner.sweepParts(parts, plan: [], remote: [:]) }
        guard seen.changed.isEmpty else {
            logger.debug("full pass: \(seen.changed.count) path(s) differ from their rows; a watched pass looks at them")
            var result = try await run(.watched(SettledChanges(paths: seen.changed), remote: false))
            // Its twins where it looked (nil: everywhere, the rows it read were all of them),
            // this comparison's elsewhere.
            if let looked = result.twinsScope {
                result.normalisationTwins = seen.twins.filter { !looked.contains($0[0].parent) } + result.normalisationTwins
                result.twinsScope = nil
            }
            let named = Set(result.skippedNames.map(\.path))
            result.skippedNames += seen.skipped.filter { !named.contains($0.path) }
            return result
        }
        _ = release.admits(nil)
        record(held: nil)
        return PassResult(steps: 0, report: RunReport(), skippedNames: seen.skipped, normalisationTwins: seen.twins)
    }

    /// What besides the listing decides how a walk compares with the rows: the exclude
    /// patterns and the bundle rule. A walk kept under others (the user removed a pattern)
    /// must not spare the comparison, or what the pattern hid would never sync.
    var listingContext: String {
        (["exclude"] + scanner.exclude.patterns + ["bundles"] + scanner.bundles.extensions.sorted()).joined(separator: "\n")
    }

    /// The remote walk a pass makes before it reads the rows, where that may spare reading
    /// them: an idle poll (a watched pass with nothing settled) whose walk finds the remote
    /// as recorded is done; so is a full pass whose walk finds it so and whose folder-by-folder
    /// comparison could tell what differs (`walkBesideStreamedAgreement`, `agreedPass`).
    /// Otherwise the walk's listing, if it was kept, for the comparison; no walk (nil, nil)
    /// for other passes, and when a folder was unreadable before, or (for a full pass) the
    /// domain was switched or a step failed before.
    func walkFirst(_ scope: PassScope, switched: Bool, unreadableBefore: Bool, failedBefore: Bool) async throws(ProviderError)
        -> (done: PassResult?, listing: WalkedListing?, lap: String?) {
        guard scope.walksRemote, !unreadableBefore else { return (nil, nil, nil) }
        if Self.touchesNothing(scope) {
            let walked = try await runner.provider.walkMatching(context: listingContext, ignores: ignored)
            guard walked.unchanged else { return (nil, walked.listing, nil) }
            try checkRoot(try runner.provider.itemRecord(.root))
            return (unchangedPoll(), nil, "remote walk (as listed when it last agreed with the rows: no row read)")
        }
        guard scope.isFull, !switched, !failedBefore else { return (nil, nil, nil) }
        let walked = try await walkBesideStreamedAgreement()
        guard let seen = walked.seen else { return (nil, walked.listing, "remote walk") }
        let lap = "remote walk and local scan (folder by folder, \(seen.rows) rows: "
            + (seen.changed.isEmpty ? "every item as recorded)" : "\(seen.changed.count) path(s) differ)")
        return (try await agreedPass(seen), nil, lap)
    }

    /// Walks the remote and, meanwhile, compares the sync folder with the rows
    /// (`streamedAgreement`). `seen` is set when the walk found the remote as recorded
    /// (`SyncProvider.walkMatching`), no row changed meanwhile, and the folder's comparison
    /// could tell what differs from the rows; otherwise the walk's listing, for the whole
    /// comparison (nil when a large one was not kept: the comparison walks again). The two
    /// run side by side: each mostly waits for the kernel.
    func walkBesideStreamedAgreement() async throws(ProviderError) -> (listing: WalkedListing?, seen: StreamedAgreement?) {
        let provider = runner.provider, context = listingContext, ignores = ignored
        let generation = provider.rowsGeneration(), disagreed = StopFlag()
        let walking = Task { () async -> Result<(listing: WalkedListing?, unchanged: Bool), ProviderError> in
            do throws(ProviderError) {
                return .success(try await provider.walkMatching(context: context, ignores: ignores, disagreed: { disagreed.stop() }))
            } catch { return .failure(error) }
        }
        let seen: StreamedAgreement?
        do throws(ProviderError) {
            seen = generation == nil ? nil : try streamedAgreement(giveUp: disagreed)
        } catch {
            walking.cancel()
            _ = await walking.value  // no walk outlives its pass (it may remove temporaries)
            throw error
        }
        let walked = try await withTaskCancellationHandler { await walking.value } onCancel: { walking.cancel() }.get()
        // A row written while the folder or the walk was compared (hydration, another
        // process): compared as a whole.
        return (walked.listing, walked.unchanged && provider.rowsGeneration() == generation ? seen : nil)
    }

    /// The names never synced (the exclude patterns), for a walk compared with the rows.
    var ignored: @Sendable (RemotePath) -> Bool {
        { [exclude = scanner.exclude] path in exclude.excludes(path) }
    }
}
