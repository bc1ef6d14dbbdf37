import Foundation

/// What a sync pass reads from the engine's records and writes back besides the journal
/// (`OperationJournal`): the rows it plans from, the sync anchor, a bundle's manifest, the
/// sync folder's identity on the root's row, the folders it could not read, and the remote
/// the rows describe. The replica goes through this, never through the state DB or the
/// remote store.
///
/// Reads see every write that returned before them; each write is one durable transaction.
public protocol PassRecords: Sendable {
    /// Every item row, parents before children.
    func items() throws(ProviderError) -> [ItemRecord]

    /// The row of `id`; nil when the engine does not know it.
    func itemRecord(_ id: ItemIdentifier) throws(ProviderError) -> ItemRecord?

    /// The rows of the items in the folder `id`, in byte order of their names.
    func children(of id: ItemIdentifier) throws(ProviderError) -> [ItemRecord]

    /// The anchor of the last remote walk; nil before the first.
    func syncAnchor() throws(ProviderError) -> SyncAnchor?

    /// The manifest of the bundle `id` as last synced; empty when none is recorded.
    func bundleMembers(of id: ItemIdentifier) throws(ProviderError) -> [BundleMember]

    /// Records the root's row as the replica found the sync folder (its inode and
    /// generation, in `local`).
    func recordSyncFolder(_ root: ItemRecord) throws(ProviderError)

    /// Gives rows recorded before birth times were kept the birth time of the inode they
    /// name, each only while the row still has that inode, size and mtime (one transaction).
    func recordBirthTimes(_ stats: [ItemIdentifier: LocalStat]) throws(ProviderError)

    /// The folders the last pass could not list (for the next pass and for status).
    func unreadableFolders() throws(ProviderError) -> [UnreadableFolder]

    /// Replaces the list of folders the last pass could not list.
    func recordUnreadableFolders(_ folders: [UnreadableFolder]) throws(ProviderError)
    /// Records what this pass held back (nil: nothing), for `status` while the daemon is
    /// not running.
    func recordHeldDeletions(_ held: DeletionHold?) throws(ProviderError)

    /// Makes sure the records describe the remote at `location` (see
    /// `SyncProvider.bindRemote(location:discarding:)`); returns the switch when the domain
    /// was pointed at another remote.
    func bindRemote(location: String,
                    discarding: (PendingOperation) -> Void) async throws(ProviderError) -> RemoteChange?
}
