import Foundation

// An idle poll in a large domain: the remote lists what it listed last time, and no row
// changed since. Comparing the two would read and index every row (a second and 100 MiB at
// 100 000 items) to find nothing; the listing's digest against the last walk that agreed
// with the rows tells the same without reading a row.
extension SyncProvider {
    /// The rows' generation now (`StateStore.itemsGeneration`); read before the rows a pass
    /// compares a walk with, for `noteMatchedWalk`.
    public func rowsGeneration() -> Int64? {
        state.itemsGeneration()
    }

    /// Walks the remote. Nil when nothing can have changed since the last walk a pass found
    /// agreeing with the rows (`noteMatchedWalk`): the store listed exactly what it listed
    /// then, and no row changed since. Otherwise the listing (with its digest when it was
    /// computed here), for `changes(since:tree:walked:)`.
    public func walkUnlessUnchanged() async throws(ProviderError) -> WalkedListing? {
        let known = matchedWalk.withLock { $0 }
        let listing = try await store.listing(below: .root)
        guard let known, let generation = state.itemsGeneration(), generation == known.generation,
              !listing.hidesDotNames, listing.unlisted.isEmpty else {
            return WalkedListing(listing: listing, digest: nil)
        }
        let digest = ListingDigest(listing)
        return digest == known.digest ? nil : WalkedListing(listing: listing, digest: digest)
    }

    /// Records that `digest`'s listing agreed with the rows of `generation`: a pass compared
    /// them and found nothing to do.
    public func noteMatchedWalk(_ digest: ListingDigest?, generation: Int64?) {
        guard let digest, let generation else { return }
        matchedWalk.withLock { $0 = (digest, generation) }
    }
}

/// A walk of the whole remote a caller made already, with its digest when that was
/// computed (`walkUnlessUnchanged`), so `changes(since:tree:walked:)` does not hash it again.
public struct WalkedListing: Sendable {
    public let listing: RemoteListing
    public let digest: ListingDigest?
}
