/// What changed remotely since a sync anchor: the working set's enumeration.
public struct ChangeBatch: Sendable {
    /// Every remote entry now, by path (the reconciliation walks it whole: servers such as
    /// Apache do not propagate folder ETags, so no subtree may be pruned).
    public var snapshot: [RemotePath: RemoteEntry]
    /// Entries that are new or whose version differs from the recorded one.
    public var updated: [RemoteEntry]
    /// Recorded items (with a remote version) that the snapshot no longer holds at their
    /// recorded path. A rename shows as one of these plus an `updated` entry.
    public var deleted: [ItemIdentifier]
    /// The anchor to ask from next time.
    public var anchor: SyncAnchor
    /// Folders the store could not list, with why: the recorded items below them are in
    /// `snapshot` as recorded, never in `deleted`.
    public var unlisted: [RemotePath: ProviderError] = [:]
    /// The digest of the listing compared, for `noteMatchedWalk`; nil when the comparison
    /// depended on more than the listing and the rows (a server that hides dot names, a
    /// folder not listed, a bundle being swapped).
    public var listingDigest: ListingDigest?

    public var isEmpty: Bool { updated.isEmpty && deleted.isEmpty }
}
