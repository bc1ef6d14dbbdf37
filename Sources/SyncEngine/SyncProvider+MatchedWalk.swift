import Foundation

// An idle poll in a large domain: the remote lists what it listed last time, and no row
// changed since. Comparing the two would read and index every row (a second and 100 MiB at
// 100 000 items) to find nothing; the listing's digest against the last walk that agreed
// with the rows tells the same without reading a row. The digest is made as the walk goes,
// so a store that lists folder by folder never holds a large listing for it.
extension SyncProvider {
    /// The rows' generation now (`StateStore.itemsGeneration`); read before the rows a pass
    /// compares a walk with, for `noteMatchedWalk`.
    public func rowsGeneration() -> Int64? {
        state.itemsGeneration()
    }

    /// Walks the remote and tells whether it lists what the rows record: when no row changed
    /// since the last walk a pass found agreeing with them (`noteMatchedWalk`), by whether it
    /// listed what that walk listed; otherwise (a pass wrote rows since: its own uploads),
    /// or when it did not (an excluded backup file appeared, an mtime moved), by comparing
    /// each folder the walk hands over with that folder's rows (`WalkAgreement`), which then
    /// becomes the walk that agreed. Unchanged: the remote is as recorded, and nothing needs
    /// comparing with the rows.
    /// The listing, for the comparison when anything differs; nil when it was not kept
    /// (more than `keptListingLimit` entries while the walk might still agree).
    /// `context`: what else decides how the walk compares with the rows (the caller's
    /// exclude patterns and bundle rule): part of the digest, so a walk kept under another
    /// configuration (a pattern removed, in this process or the last) never matches.
    /// `ignores`: the names the caller never records (its exclude patterns).
    /// `disagreed` is called (at most once) as soon as the walk is known not to agree.
    public func walkMatching(context: String, ignores: @escaping @Sendable (RemotePath) -> Bool = { _ in false },
                             disagreed: (@Sendable () -> Void)? = nil) async throws(ProviderError)
        -> (listing: WalkedListing?, unchanged: Bool) {
        // The rows' version is read once: the kept walk counts only while it is theirs, and
        // whatever is compared below is compared with the rows of this version.
        let generation = state.itemsGeneration()
        let known = generation.flatMap { now in lastMatchedWalk().flatMap { $0.generation == now ? $0 : nil } }
        let agreeing = { WalkAgreement(state: self.state, bundles: self.bundles, ignores: ignores) }
        // A server that leaves dot names out of its listings (nginx) is never compared
        // folder by folder: its listings are completed by name first.
        guard known != nil || generation != nil && !listingsHideDotNames.withLock({ $0 }) else {
            disagreed?()
            return (WalkedListing(listing: try await store.listing(below: .root), digest: nil), false)
        }
        var agreement = known == nil ? agreeing() : nil
        var builder = ListingDigest.Builder(context: context)
        var kept: RemoteListing? = RemoteListing(entries: [])
        var told = false
        let limit = keptListingLimit
        let walked = try await store.walk(below: .root) { entries in
            builder.add(entries)
            agreement?.add(entries)
            let differs = agreement?.disagreement != nil
            if differs && !told {
                told = true
                disagreed?()
            }
            guard let count = kept?.entries.count else { return }
            // Once the walk cannot agree, its listing is kept whole for the comparison.
            if !differs && count > 0 && count + entries.count > limit { kept = nil } else { kept?.collect(entries) }
        }
        listingsHideDotNames.withLock { $0 = walked.hidesDotNames }
        let digest = builder.finish()
        let comparable = !walked.hidesDotNames && walked.unlisted.isEmpty
        var unchanged = false
        if let known, comparable {
            // The rows are looked at again: one written during the walk (hydration, another
            // process) must be compared.
            unchanged = digest.hex == known.digest && state.itemsGeneration() == generation
            if !unchanged, let listing = kept {
                agreement = agreeing()
                agreement?.add(listing.entries)
            }
        }
        if !unchanged, comparable, var agreement {
            unchanged = agreement.finish(rows: (try? state.itemCount()) ?? 0) && state.itemsGeneration() == generation
            if unchanged, !agreement.sawWeakVersion { noteMatchedWalk(digest, generation: generation) }
        }
        if !unchanged && !told { disagreed?() }
        // No bundle is missing beside an old version set aside: a swap seen by an earlier
        // walk is over, and one seen later waits its own `swapWait` (as `changes` would).
        if unchanged { swapWaits.withLock { $0 = [:] } }
        guard var listing = kept else { return (nil, unchanged) }
        (listing.unlisted, listing.hidesDotNames) = (walked.unlisted, walked.hidesDotNames)
        return (WalkedListing(listing: listing, digest: comparable ? digest : nil), unchanged)
    }

    /// Records that `digest`'s listing agreed with the rows of `generation`: a pass compared
    /// them and found nothing to do. Kept in the state DB too (when it changed), so the first
    /// pass of the next process can skip the comparison; a failure there costs only that.
    public func noteMatchedWalk(_ digest: ListingDigest?, generation: Int64?) {
        guard let digest, let generation else { return }
        let walk = StoredMatchedWalk(digest: digest.hex, generation: generation)
        let changed = matchedWalk.withLock { known in
            defer { known = walk }
            return known != walk
        }
        if changed { try? state.recordMatchedWalk(walk) }
    }

    /// True when no row changed since the last walk a pass found agreeing with the rows: a
    /// walk listing what that one listed would find the remote as recorded.
    public func rowsUnchangedSinceMatchedWalk() -> Bool {
        guard let known = lastMatchedWalk(), let generation = state.itemsGeneration() else { return false }
        return generation == known.generation
    }

    /// The last walk found agreeing with the rows: this process's, else the one the state
    /// DB kept from an earlier process.
    func lastMatchedWalk() -> StoredMatchedWalk? {
        if let known = matchedWalk.withLock({ $0 }) { return known }
        guard let stored = try? state.matchedWalk() else { return nil }
        matchedWalk.withLock { if $0 == nil { $0 = stored } }
        return stored
    }
}

/// A walk of the whole remote a caller made already, with its digest when that was
/// computed (`walkMatching`), so `changes(since:tree:walked:)` does not hash it again.
public struct WalkedListing: Sendable {
    public let listing: RemoteListing
    public let digest: ListingDigest?
}
