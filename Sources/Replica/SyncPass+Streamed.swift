import SyncEngine

// A full pass in a domain where nothing changed — the daemon's start, the hourly backstop,
// `run --once` — is the usual case, and with the whole comparison it costs every row, every
// local item and every remote entry in memory at once (300 MiB and 4 s at 100 000 files).
// When the remote walk lists what the last walk agreeing with the rows listed, and no row
// changed since, the remote is as recorded: only the sync folder can differ, and that is
// compared with the rows one folder at a time, in the scan's order, holding one folder's
// names and rows. The first difference ends it; the pass then compares everything at once,
// as before, so what it finds and does is the planner's, whatever this shortcut saw.

/// What a full pass that found every item as recorded saw besides the items.
struct StreamedAgreement {
    var skipped: [(path: String, reason: String)] = []
    var temporaries: [String] = []
    var twins: [[RemotePath]] = []
    /// Rows recorded without a birth time whose file is there unchanged (`recordBirthTimes`).
    var births: [ItemIdentifier: LocalStat] = [:]
    /// How many rows were compared, the root's not counted.
    var rows = 0
}

extension SyncPass {
    /// Compares the sync folder with the rows, folder by folder from the root. Nil as soon as
    /// anything differs or cannot be read: an item new, gone, of another kind, of another
    /// inode, size, mtime or link target, a row without a remote version, a folder that
    /// vanished or could not be listed (the whole comparison says what to do about each).
    func streamedAgreement() throws(ProviderError) -> StreamedAgreement? {
        let records = runner.provider
        try checkRoot(try records.itemRecord(.root))
        var seen = StreamedAgreement()
        var scan = LocalScan()  // collects what the folders' listings pass over
        var folders: [(path: RemotePath, id: ItemIdentifier)] = [(.root, .root)]
        while let folder = folders.popLast() {
            // Both in byte order of their names (the rows come so): a merge, name against name.
            // Not `String`'s order or equality, which take NFC and NFD spellings as one name.
            let entries = try scanner.list(folder.path, into: &scan)
                .sorted { $0.path.name.utf8.lexicographicallyPrecedes($1.path.name.utf8) }
            let rows = try records.children(of: folder.id)
            guard scan.unreadable.isEmpty, rows.count == entries.count else { return nil }
            for (entry, row) in zip(entries, rows) {
                guard entry.path.name.utf8.elementsEqual(row.name.utf8), row.kind == .folder || row.remoteETag != nil,
                      Reconciler.agrees(Self.observation(entry), with: row) else { return nil }
                if let stat = row.local, stat.birthNanoseconds == 0, entry.stat.birthNanoseconds != 0, entry.stat == stat {
                    seen.births[row.id] = entry.stat
                }
                if row.kind == .folder { folders.append((entry.path, row.id)) }
            }
            seen.rows += rows.count
            let candidates = entries.compactMap { $0.path.name.utf8.contains { $0 >= 0x80 } ? $0.path : nil }
            if candidates.count > 1 { seen.twins += NormalisationClash.twins(among: candidates) }
        }
        seen.skipped = scan.skipped
        seen.temporaries = scan.temporaries
        return seen
    }

    /// The remote walk a pass makes before it reads the rows, where that may spare reading
    /// them: an idle poll (a watched pass with nothing settled) whose walk finds the remote
    /// as recorded is done; so is a full pass whose walk and folder agree with every row
    /// (`walkBesideStreamedAgreement`). Otherwise the walk's listing, if it was kept, for the
    /// comparison; no walk (nil, nil) for other passes, and when a folder was unreadable
    /// before, or (for a full pass) the domain was switched or a step failed before.
    func walkFirst(_ scope: PassScope, switched: Bool, unreadableBefore: Bool, failedBefore: Bool) async throws(ProviderError)
        -> (done: PassResult?, listing: WalkedListing?, lap: String?) {
        guard scope.walksRemote, !unreadableBefore else { return (nil, nil, nil) }
        if Self.touchesNothing(scope) {
            let walked = try await runner.provider.walkMatching()
            guard walked.unchanged else { return (nil, walked.listing, nil) }
            try checkRoot(try runner.provider.itemRecord(.root))
            return (unchangedPoll(), nil, "remote walk (as listed when it last agreed with the rows: no row read)")
        }
        guard scope.isFull, !switched, !failedBefore else { return (nil, nil, nil) }
        let walked = try await walkBesideStreamedAgreement()
        guard let seen = walked.seen else { return (nil, walked.listing, "remote walk") }
        return (try agreedPass(seen), nil, "remote walk and local scan (folder by folder, \(seen.rows) rows: every item as recorded)")
    }

    /// Walks the remote and, meanwhile, when no row changed since the last walk a pass found
    /// agreeing with them, compares the sync folder with the rows (`streamedAgreement`).
    /// `seen` is set when both agree with the rows: the walk listed what that walk listed,
    /// and every local item is as recorded; otherwise the walk's listing, for the whole
    /// comparison (nil when a large one was not kept: the comparison walks again). The two
    /// run side by side: each mostly waits for the kernel.
    func walkBesideStreamedAgreement() async throws(ProviderError) -> (listing: WalkedListing?, seen: StreamedAgreement?) {
        let provider = runner.provider
        let walking = Task { () async -> Result<(listing: WalkedListing?, unchanged: Bool), ProviderError> in
            do throws(ProviderError) { return .success(try await provider.walkMatching()) } catch { return .failure(error) }
        }
        let seen: StreamedAgreement?
        do throws(ProviderError) {
            seen = provider.rowsUnchangedSinceMatchedWalk() ? try streamedAgreement() : nil
        } catch {
            walking.cancel()
            throw error
        }
        let walked = try await walking.value.get()
        return (walked.listing, walked.unchanged ? seen : nil)
    }

    /// The result of a full pass whose walk and folder agreed with every row
    /// (`streamedAgreement`): what the whole comparison gives when it plans nothing.
    func agreedPass(_ seen: StreamedAgreement) throws(ProviderError) -> PassResult {
        runner.sweepParts(resumableParts(seen.temporaries, scope: .full), plan: [], remote: [:])
        if !seen.births.isEmpty {
            do { try runner.provider.recordBirthTimes(seen.births) } catch {
                logger.warning("cannot record the birth times of \(seen.births.count) item(s): \(error.message)")
            }
        }
        _ = release.admits(nil)
        record(held: nil)
        return PassResult(steps: 0, report: RunReport(), skippedNames: seen.skipped, normalisationTwins: seen.twins)
    }
}
