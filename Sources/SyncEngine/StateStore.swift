import Foundation

/// The engine's port to its durable middle-man state (the SQLite state DB in
/// production, an in-memory store in unit tests).
///
/// Contract:
/// - `apply` is atomic and durable: after it returns, all of its changes survive a crash
///   or `kill -9`; after it throws, none of them happened.
/// - `journal` is durable before it returns: an operation is journaled before it starts.
/// - Reads see every `apply` that returned before them.
/// - Errors are `ProviderError`s (`localDiskFull` on ENOSPC, `cannotSynchronize` otherwise).
public protocol StateStore: Sendable {
    func item(_ id: ItemIdentifier) throws(ProviderError) -> ItemRecord?
    /// The child of `parent` named exactly `name` (byte-exact).
    func item(parent: ItemIdentifier, name: String) throws(ProviderError) -> ItemRecord?
    /// The item `id` (when given) and the child of `parent` named `name`, read together:
    /// what recording an item at a path looks for (one read where two were).
    func item(_ id: ItemIdentifier?, andChildOf parent: ItemIdentifier,
              named name: String) throws(ProviderError) -> (byID: ItemRecord?, child: ItemRecord?)
    func children(of parent: ItemIdentifier) throws(ProviderError) -> [ItemRecord]
    /// Every item, parents before children.
    func allItems() throws(ProviderError) -> [ItemRecord]
    /// How many item rows there are, the root's included.
    func itemCount() throws(ProviderError) -> Int
    /// A number that changes whenever a row a pass plans from changed (setting the sync
    /// anchor alone changes none), kept with the rows so that it survives a restart;
    /// nil when the store cannot tell. A walk that lists what the last walk matching the
    /// rows listed, with the rows' generation unchanged, needs no row read.
    func itemsGeneration() -> Int64?
    /// The last walk a pass found agreeing with the rows (`recordMatchedWalk`); nil when none
    /// is kept.
    func matchedWalk() throws(ProviderError) -> StoredMatchedWalk?
    /// Keeps the last walk a pass found agreeing with the rows, for a pass in a new process.
    func recordMatchedWalk(_ walk: StoredMatchedWalk) throws(ProviderError)
    /// The item whose recorded local inode is `inode` (rename detection).
    func item(localInode: UInt64) throws(ProviderError) -> ItemRecord?
    /// The item whose server file id is `fileID` (remote rename detection).
    func item(remoteFileID: String) throws(ProviderError) -> ItemRecord?

    func syncAnchor() throws(ProviderError) -> SyncAnchor?
    /// The remote the rows describe; nil before it was first recorded.
    func remoteIdentity() throws(ProviderError) -> RemoteIdentity?
    func hydratedRanges(of id: ItemIdentifier) throws(ProviderError) -> (ranges: RangeSet, version: ETag?)
    /// The manifest of the bundle `id` as last synced; empty when none is recorded.
    func bundleMembers(of id: ItemIdentifier) throws(ProviderError) -> [BundleMember]

    /// Writes `operation` to the journal (its `id` is ignored) and returns the id assigned.
    func journal(_ operation: PendingOperation) throws(ProviderError) -> Int64
    /// Writes every operation to the journal in one transaction (one fsync for a whole
    /// plan) and returns their ids, in order.
    func journal(_ operations: [PendingOperation]) throws(ProviderError) -> [Int64]
    /// The journal, oldest first.
    func pendingOperations() throws(ProviderError) -> [PendingOperation]

    /// Applies every change in one transaction.
    func apply(_ changes: [StateChange]) throws(ProviderError)

    /// The folders the last pass could not list (for the next pass and for status).
    func unreadableFolders() throws(ProviderError) -> [UnreadableFolder]
    /// Replaces the list of folders the last pass could not list; durable when it returns.
    func recordUnreadableFolders(_ folders: [UnreadableFolder]) throws(ProviderError)

    /// The deletions the last pass held back; nil when none.
    func heldDeletions() throws(ProviderError) -> DeletionHold.Summary?
    /// Replaces what the last pass held back (nil: nothing); writes only when it changed.
    func recordHeldDeletions(_ held: DeletionHold.Summary?) throws(ProviderError)
}

extension StateStore {
    /// Counts `allItems()`; a database counts without reading the rows.
    public func itemCount() throws(ProviderError) -> Int { try allItems().count }

    public func item(_ id: ItemIdentifier?, andChildOf parent: ItemIdentifier,
                     named name: String) throws(ProviderError) -> (byID: ItemRecord?, child: ItemRecord?) {
        (try id.flatMap { id throws(ProviderError) in try item(id) }, try item(parent: parent, name: name))
    }

    /// Cannot tell: every walk is compared with the rows.
    public func itemsGeneration() -> Int64? { nil }

    /// Keeps none: a new process compares its first walk with the rows.
    public func matchedWalk() throws(ProviderError) -> StoredMatchedWalk? { nil }
    public func recordMatchedWalk(_ walk: StoredMatchedWalk) throws(ProviderError) {}
}

/// A remote walk a pass found agreeing with the rows: its listing's digest (hex) and the
/// rows' generation read before the rows it was compared with.
public struct StoredMatchedWalk: Equatable, Sendable {
    public var digest: String
    public var generation: Int64

    public init(digest: String, generation: Int64) {
        self.digest = digest
        self.generation = generation
    }
}
