import Foundation

/// The File Provider's replicated-extension surface, Linux-shaped (DESIGN.md, "Layers and
/// modules"). The replica calls it; the engine never touches the sync folder.
///
/// Every write to the remote is guarded by `baseVersion` (or "must not exist" for a
/// create) and fails with `versionMismatch` — never overwrites — when the remote holds
/// another version. Each call records its result in the state DB in one transaction.
public protocol ReplicatedProvider: Sendable {
    /// The item with `id`; `noSuchItem` when the engine does not know it.
    func item(for id: ItemIdentifier) async throws(ProviderError) -> Item

    /// Creates `template` remotely (a folder, a symlink, or a file with the bytes of
    /// `contents`); `filenameCollision` when another item has that name remotely.
    func createItem(basedOn template: ItemTemplate, contents: URL?, options: WriteOptions,
                    progress: TransferProgress?) async throws(ProviderError) -> Item

    /// Applies `changedFields` of `template` to the item remotely, guarded by `baseVersion`:
    /// a rename or move is one remote MOVE; new contents are one guarded upload.
    func modifyItem(_ template: ItemTemplate, baseVersion: ItemVersion, changedFields: ItemFields,
                    contents: URL?, options: WriteOptions, progress: TransferProgress?) async throws(ProviderError) -> Item

    /// Deletes the item remotely (a folder with its subtree) and forgets it. Rejected
    /// (`deletionRejected`) when the remote item, or anything below a folder, changed
    /// since `baseVersion` / since the last sync: the replica must bring it back.
    func deleteItem(_ id: ItemIdentifier, baseVersion: ItemVersion, options: WriteOptions) async throws(ProviderError)

    /// Downloads the item's bytes into `destination` (a new file the caller owns), only if
    /// the remote still has `version` when given.
    func fetchContents(for id: ItemIdentifier, version: ItemVersion?, into destination: URL,
                       progress: TransferProgress?) async throws(ProviderError) -> FetchResult

    /// Downloads at least `minimalRange` widened to `alignment` (a power of two), strictly of
    /// `version`: `versionNoLongerAvailable` when the remote moved on.
    func fetchPartialContents(for id: ItemIdentifier, version: ItemVersion, minimalRange: ByteRange,
                              alignment: Int64, into destination: URL,
                              progress: TransferProgress?) async throws(ProviderError) -> PartialFetchResult

    /// The remote changes since `anchor` (nil: everything), and the next anchor.
    func changes(since anchor: SyncAnchor?) async throws(ProviderError) -> ChangeBatch
}

extension ReplicatedProvider {
    /// `createItem` with no journal entry.
    public func createItem(basedOn template: ItemTemplate, contents: URL?,
                           progress: TransferProgress?) async throws(ProviderError) -> Item {
        try await createItem(basedOn: template, contents: contents, options: WriteOptions(), progress: progress)
    }

    /// `modifyItem` with no journal entry.
    public func modifyItem(_ template: ItemTemplate, baseVersion: ItemVersion, changedFields: ItemFields,
                           contents: URL?, progress: TransferProgress?) async throws(ProviderError) -> Item {
        try await modifyItem(template, baseVersion: baseVersion, changedFields: changedFields, contents: contents,
                             options: WriteOptions(), progress: progress)
    }

    /// `deleteItem` with no journal entry.
    public func deleteItem(_ id: ItemIdentifier, baseVersion: ItemVersion) async throws(ProviderError) {
        try await deleteItem(id, baseVersion: baseVersion, options: WriteOptions())
    }
}
