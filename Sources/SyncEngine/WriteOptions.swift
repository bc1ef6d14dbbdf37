/// How a write call is carried out.
public struct WriteOptions: Sendable {
    /// The journal entry (pending operation) the call completes, in the same transaction
    /// that records its result; nil when the caller journaled nothing.
    public var journalEntry: Int64?
    /// The token naming the remote temporaries of a bundle write (`BundleScratch`), kept in
    /// the journal entry so they can be cleaned up after a crash; nil: a fresh one.
    public var scratchToken: String?
    /// For bundles: checks that the bundle is still what was scanned (see `BundleContents`).
    public var bundleUnchanged: (@Sendable () throws(ProviderError) -> Void)?

    public init(journalEntry: Int64? = nil, scratchToken: String? = nil,
                bundleUnchanged: (@Sendable () throws(ProviderError) -> Void)? = nil) {
        self.journalEntry = journalEntry
        self.scratchToken = scratchToken
        self.bundleUnchanged = bundleUnchanged
    }
}
