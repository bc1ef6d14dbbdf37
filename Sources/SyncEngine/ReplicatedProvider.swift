import Foundation

/// The version of an item as the File Provider sees it: the remote content version the
/// local copy is based on. A write is guarded by it; a fetch may insist on it.
public struct ItemVersion: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The remote ETag; nil for an item that never reached the remote.
    public var content: ETag?

    public init(content: ETag?) { self.content = content }

    public var description: String { content.map(String.init(describing:)) ?? "(none)" }
}

/// Which fields of an item a `modifyItem` call changes.
public struct ItemFields: OptionSet, Hashable, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The bytes (files) or the target (symlinks).
    public static let contents = ItemFields(rawValue: 1 << 0)
    /// The name in its folder.
    public static let filename = ItemFields(rawValue: 1 << 1)
    /// The folder it is in.
    public static let parentItemIdentifier = ItemFields(rawValue: 1 << 2)
}

/// What the replica knows of an item it hands to the engine: where it is and what it is.
public struct ItemTemplate: Hashable, Sendable {
    /// The item's identifier; nil for an item the engine has not seen (a create).
    public var id: ItemIdentifier?
    public var parentID: ItemIdentifier
    public var name: String
    public var kind: ItemKind
    /// For symlinks, the target as written.
    public var symlinkTarget: String?
    /// The stat of the local item whose contents are handed over, recorded with the new
    /// remote version so the replica's next look sees "unchanged".
    public var local: LocalStat?
    /// For bundles: the members found in the directory the contents URL names, hashed.
    public var bundleMembers: [BundleMember]?

    public init(id: ItemIdentifier? = nil, parentID: ItemIdentifier, name: String, kind: ItemKind,
                symlinkTarget: String? = nil, local: LocalStat? = nil, bundleMembers: [BundleMember]? = nil) {
        self.id = id
        self.parentID = parentID
        self.name = name
        self.kind = kind
        self.symlinkTarget = symlinkTarget
        self.local = local
        self.bundleMembers = bundleMembers
    }
}

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

/// An item as the engine knows it: its middle-man record and its path now.
public struct Item: Hashable, Sendable {
    public var record: ItemRecord
    public var path: RemotePath
    public var id: ItemIdentifier { record.id }
    public var version: ItemVersion { ItemVersion(content: record.remoteETag) }

    public init(record: ItemRecord, path: RemotePath) {
        self.record = record
        self.path = path
    }
}

/// The bytes `fetchContents` brought down: a file the caller now owns, and their version.
public struct FetchResult: Sendable {
    /// The file the bytes were written to (the destination the caller named), fsynced.
    public var contents: URL
    /// The remote version the bytes belong to.
    public var version: ItemVersion
}

/// The bytes `fetchPartialContents` brought down.
public struct PartialFetchResult: Sendable {
    public var contents: URL
    /// The range written to `contents` (from its offset 0): at least the minimal range,
    /// aligned, clamped to the file's size.
    public var range: ByteRange
    public var version: ItemVersion
}

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

    public var isEmpty: Bool { updated.isEmpty && deleted.isEmpty }
}

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
