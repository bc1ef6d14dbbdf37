// Durability contract: every remote write is followed by one `StateStore.apply` that records
// its result and completes its journal entry together. A crash between the write and the
// apply leaves the journal entry and the old row: the next reconciliation sees a side that
// changed without a record and decides again (comparing contents where both sides hold a
// file), so nothing is written twice over data it did not see.

import Foundation
import Synchronization

/// The engine: the File Provider's replicated extension over a `RemoteStore` and a
/// `StateStore`. It never touches the sync folder; the replica hands it files to upload and
/// names the files it downloads into.
///
/// Two surfaces: the `ReplicatedProvider` calls, which find an item's remote path from the
/// state DB (what the watcher uses), and the path-explicit operations of
/// `SyncProvider+Operations.swift`, which carry out the steps of a reconciliation plan at the
/// paths the plan decided. Both record through `record(at:…)`.
///
/// It alone reads and writes its ports: the replica journals, completes and backs off
/// operations through `OperationJournal`, and reads and records what a pass needs through
/// `PassRecords`.
///
/// Isolation: safe to call from many tasks at once; the state store serialises writes.
public final class SyncProvider: Sendable {
    /// The remote; only the engine writes to it (STYLE.md §9).
    let store: any RemoteStore
    /// The state DB; only the engine reads and writes it. The replica goes through
    /// `OperationJournal` and `PassRecords`.
    let state: any StateStore
    public let clock: any SyncClock
    /// Which folders are bundles, synced as one item.
    public let bundles: BundleRule
    let folders = FolderIndex()
    /// Bundles found missing beside another client's old version set aside, with when a
    /// walk first found them so (`changes(since:)`).
    let swapWaits = Mutex<[RemotePath: Date]>([:])
    /// How long a bundle may be missing beside a version set aside before it is taken as
    /// deleted: a real swap lasts milliseconds; one that outlasts this is a client that
    /// crashed in the middle (its restart puts the old one back).
    public static let swapWait: TimeInterval = 60
    /// Paths with a name beginning with "." where a create met an item the listings do
    /// not show (nginx leaves such names out): asked for by name by every walk until the
    /// server no longer has them (`addHiddenEntries`).
    let collidedHiddenNames = Mutex<Set<RemotePath>>([])
    /// The last walk a pass found agreeing with the rows, and the rows' generation when they
    /// were read for it (`SyncProvider+MatchedWalk.swift`).
    let matchedWalk = Mutex<StoredMatchedWalk?>(nil)
    /// True when the last walk found the server leaving dot names out of its listings
    /// (nginx): a walk there is not compared with the rows folder by folder.
    let listingsHideDotNames = Mutex(false)
    /// At most this many entries of a walk that may find the remote unchanged are kept, in
    /// case it does not: a larger domain's is not kept (flat memory), and a remote that
    /// changed is walked again for the comparison. A store that lists at once (one PROPFIND)
    /// has its listing in memory anyway: it is kept (`walkMatching`).
    let keptListingLimit: Int

    public init(store: any RemoteStore, state: any StateStore, clock: any SyncClock = SystemClock(),
                bundles: BundleRule = .standard, keptListingLimit: Int = 20_000) {
        self.store = store
        self.state = state
        self.clock = clock
        self.bundles = bundles
        self.keptListingLimit = keptListingLimit
    }

    // MARK: Paths and identities

    /// The identifier of the item recorded at `path`, or nil when none is.
    public func itemID(at path: RemotePath) throws(ProviderError) -> ItemIdentifier? {
        if path.isRoot { return .root }
        if let known = folders.id(at: path) { return known }
        guard let parent = try itemID(at: path.parent), let record = try state.item(parent: parent, name: path.name) else {
            return nil
        }
        if record.kind == .folder { folders.remember(record.id, at: path) }
        return record.id
    }

    /// The recorded path of `id`; nil when it is unknown or its parent chain is broken.
    public func path(of id: ItemIdentifier) throws(ProviderError) -> RemotePath? {
        var names: [String] = []
        var cursor = id
        while cursor != .root {
            guard let record = try state.item(cursor), let parent = record.parentID, names.count < 4096 else { return nil }
            names.append(record.name)
            cursor = parent
        }
        return try? RemotePath(names.reversed())
    }

    func requirePath(of id: ItemIdentifier) throws(ProviderError) -> RemotePath {
        guard let path = try path(of: id) else {
            throw ProviderError(.noSuchItem, "item \(id) is not known to the engine")
        }
        return path
    }

    func requireParent(of path: RemotePath) throws(ProviderError) -> ItemIdentifier {
        guard let parent = try itemID(at: path.parent) else {
            throw ProviderError(.parentMissing, "the folder \(path.parent) of \(path) is not recorded yet")
        }
        return parent
    }

    // MARK: Recording

    /// Records that both sides hold the item at `path` with these versions, and completes
    /// `operation`, in one transaction. The row is `item`'s, else the row already at `path`
    /// of the same kind (a replay), else a new one. `materialization` is what a file holds
    /// locally, as the placeholder port placed it.
    @discardableResult
    public func record(at path: RemotePath, item: ItemIdentifier?, kind: ItemKind, remote: RemoteEntry?,
                       local: LocalStat?, symlinkTarget: String? = nil, bundleMembers: [BundleMember]? = nil,
                       materialization: Materialization = .materialized, operation: Int64?) throws(ProviderError) -> ItemRecord {
        let (record, changes, foldersChanged) = try recording(at: path, item: item, kind: kind, remote: remote, local: local,
                                                              symlinkTarget: symlinkTarget, bundleMembers: bundleMembers,
                                                              materialization: materialization)
        try commit(changes, completing: operation, foldersChanged: foldersChanged)
        return record
    }

    /// A file to record (`record(_:)`): the arguments of `record(at:...)` for a file.
    public struct FileRecord: Sendable {
        public var path: RemotePath
        public var item: ItemIdentifier?
        public var remote: RemoteEntry?
        public var local: LocalStat?
        public var materialization: Materialization
        public var operation: Int64?

        public init(path: RemotePath, item: ItemIdentifier?, remote: RemoteEntry?, local: LocalStat?,
                    materialization: Materialization, operation: Int64?) {
            self.path = path
            self.item = item
            self.remote = remote
            self.local = local
            self.materialization = materialization
            self.operation = operation
        }
    }

    /// Records `files` as `record(at:...)` records each, in one transaction (a round of
    /// downloads, `PlanRunner`): each one's record, or why it could not be recorded. A file
    /// whose row cannot be made (its folder not recorded) fails alone; when the transaction
    /// is refused (a change the database does not take: a name another row holds), each
    /// file is recorded again on its own, so a file fails only for its own changes. A file
    /// that resolves to a row another file of the round already writes is recorded after
    /// the ones before it, as one call after another would.
    public func record(_ files: [FileRecord]) -> [Result<ItemRecord, ProviderError>] {
        var outcomes: [Result<ItemRecord, ProviderError>?] = Array(repeating: nil, count: files.count)
        var pending: [(index: Int, changes: [StateChange])] = []
        var taken: Set<ItemIdentifier> = []
        for (index, file) in files.enumerated() {
            do throws(ProviderError) {
                var (record, changes) = try fileRecording(file)
                if taken.contains(record.id) {
                    commitRecords(pending, into: &outcomes)
                    (pending, taken) = ([], [])
                    (record, changes) = try fileRecording(file)
                }
                taken.insert(record.id)
                pending.append((index, changes))
                outcomes[index] = .success(record)
            } catch {
                outcomes[index] = .failure(error)
            }
        }
        commitRecords(pending, into: &outcomes)
        return outcomes.map { $0! }
    }

    /// The row and changes `record(_:)` writes for `file`, its journal entry completed.
    private func fileRecording(_ file: FileRecord) throws(ProviderError) -> (ItemRecord, [StateChange]) {
        let (record, changes, _) = try recording(at: file.path, item: file.item, kind: .file, remote: file.remote,
                                                 local: file.local, symlinkTarget: nil, bundleMembers: nil,
                                                 materialization: file.materialization)
        return (record, changes + (file.operation.map { [.completeOperation($0)] } ?? []))
    }

    /// Applies the changes of `pending` files in one transaction, else each on its own;
    /// a file whose changes were refused gets the refusal as its outcome.
    private func commitRecords(_ pending: [(index: Int, changes: [StateChange])],
                               into outcomes: inout [Result<ItemRecord, ProviderError>?]) {
        guard !pending.isEmpty else { return }
        do throws(ProviderError) {
            return try state.apply(pending.flatMap(\.changes))
        } catch {
            guard pending.count > 1 else { return outcomes[pending[0].index] = .failure(error) }
        }
        for file in pending {
            do throws(ProviderError) { try state.apply(file.changes) } catch { outcomes[file.index] = .failure(error) }
        }
    }

    /// The row `record(at:...)` writes and the changes that write it; `foldersChanged` when
    /// a folder moved.
    private func recording(at path: RemotePath, item: ItemIdentifier?, kind: ItemKind, remote: RemoteEntry?,
                           local: LocalStat?, symlinkTarget: String?, bundleMembers: [BundleMember]?,
                           materialization: Materialization) throws(ProviderError)
        -> (ItemRecord, [StateChange], foldersChanged: Bool) {
        let parent = try requireParent(of: path)
        let found = try state.item(item, andChildOf: parent, named: path.name)
        let existing = found.byID ?? found.child.flatMap { $0.kind == kind ? $0 : nil }
        let id = existing?.id ?? item ?? ItemIdentifier(UUID().uuidString)
        let record = ItemRecord(id: id, parentID: parent, name: path.name, kind: kind,
                                size: kind == .folder ? 0 : remote?.size ?? local?.size ?? 0,
                                remoteETag: remote?.etag, remoteFileID: remote?.fileID,
                                symlinkTarget: kind == .symlink ? symlinkTarget ?? remote?.symlinkTarget : nil,
                                contentHash: nil, local: local, materialization: kind == .file ? materialization : .materialized,
                                pinState: existing?.pinState ?? .inherited)
        let moved = existing.map { $0.parentID != parent || !$0.name.utf8.elementsEqual(path.name.utf8) } ?? false
        var changes: [StateChange] = [.upsert(record)]
        // A file placed whole or dataless holds no ranges of any version (a new version's
        // placeholder must not inherit the old one's).
        if kind == .file, record.materialization != .partial {
            changes.append(.setHydratedRanges(id, RangeSet(), version: record.remoteETag))
        }
        if let bundleMembers { changes.append(.setBundleMembers(id, bundleMembers)) }
        return (record, changes, moved && kind == .folder)
    }

    /// Removes the row of `id` and its subtree, completing `operation`.
    public func forget(_ id: ItemIdentifier, operation: Int64?) throws(ProviderError) {
        try commit([.remove(id)], completing: operation, foldersChanged: true)
    }

    /// Applies `changes` and completes `operation` in one transaction.
    func commit(_ changes: [StateChange], completing operation: Int64?, foldersChanged: Bool) throws(ProviderError) {
        try state.apply(changes + (operation.map { [.completeOperation($0)] } ?? []))
        if foldersChanged { folders.forgetAll() }
    }
}

/// Folder path → identifier, remembered between lookups; forgotten whole when any folder
/// moves or goes away. Plans upload thousands of files into a few folders.
final class FolderIndex: @unchecked Sendable {
    private let lock = NSLock()
    private var ids: [RemotePath: ItemIdentifier] = [:]

    func id(at path: RemotePath) -> ItemIdentifier? { lock.withLock { ids[path] } }
    func remember(_ id: ItemIdentifier, at path: RemotePath) { lock.withLock { ids[path] = id } }
    func forgetAll() { lock.withLock { ids.removeAll() } }
}
