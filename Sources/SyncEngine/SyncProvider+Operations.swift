import Foundation

/// The remote steps of a reconciliation plan, at the paths the plan decided. Each one does
/// its remote write, then records the result and completes its journal entry in one
/// transaction (`operation`, nil when the caller journals nothing).
extension SyncProvider {
    /// Uploads the local file `contents` to `path`, guarded by `condition`, and records the
    /// item with `source` as its local stat. The store refuses a source that changes while
    /// it is read.
    @discardableResult
    public func upload(_ contents: URL, to path: RemotePath, condition: WriteCondition, source: LocalStat,
                       item: ItemIdentifier?, operation: Int64?,
                       progress: TransferProgress? = nil) async throws(ProviderError) -> ItemRecord {
        let entry: RemoteEntry
        do {
            entry = try await store.upload(from: contents, to: path, condition: condition, progress: progress)
        } catch where error.code == .filenameCollision {
            noteCollision(at: path)
            throw error
        }
        return try record(at: path, item: item, kind: .file, remote: entry, local: source, operation: operation)
    }

    /// Creates the remote folder at `path`; a folder already there counts as done (a replay,
    /// or the same folder made on both sides).
    @discardableResult
    public func makeRemoteFolder(at path: RemotePath, item: ItemIdentifier?, local: LocalStat?,
                                 operation: Int64?) async throws(ProviderError) -> ItemRecord {
        let entry: RemoteEntry
        do {
            entry = try await store.makeFolder(at: path)
        } catch where error.code == .filenameCollision {
            let existing = try await store.entry(at: path)
            guard existing.kind == .folder else {
                noteCollision(at: path)
                throw error
            }
            entry = existing
        }
        return try record(at: path, item: item, kind: .folder, remote: entry, local: local, operation: operation)
    }

    /// Creates or replaces the remote symlink at `path`, guarded by `condition`.
    @discardableResult
    public func makeRemoteSymlink(at path: RemotePath, target: String, condition: WriteCondition, source: LocalStat?,
                                  item: ItemIdentifier?, operation: Int64?) async throws(ProviderError) -> ItemRecord {
        let entry = try await store.makeSymlink(at: path, target: target, condition: condition)
        return try record(at: path, item: item, kind: .symlink, remote: entry, local: source,
                          symlinkTarget: target, operation: operation)
    }

    /// Moves the remote item (a folder with its subtree) and records its new place. The
    /// recorded remote version stays the base one: a move is not an edit, and an edit the
    /// remote made meanwhile must still be seen as one by the next step.
    @discardableResult
    public func moveRemote(from source: RemotePath, to destination: RemotePath, version: ETag?,
                           item: ItemIdentifier, operation: Int64?) async throws(ProviderError) -> ItemRecord {
        guard var record = try state.item(item) else {
            throw ProviderError(.noSuchItem, "item \(item) is not known to the engine")
        }
        var guardVersion = version
        if record.kind == .bundle, let version {
            // A store's own guard would compare the root folder's ETag.
            try await requireBundleVersion(at: source, version)
            guardVersion = nil
        }
        let entry = try await store.move(source, to: destination, version: guardVersion)
        record.parentID = try requireParent(of: destination)
        record.name = destination.name
        if record.remoteFileID != nil, let id = entry.fileID { record.remoteFileID = id }
        try commit([.upsert(record)], completing: operation, foldersChanged: record.kind == .folder)
        return record
    }

    /// Deletes the remote item and forgets it. A folder is deleted only when everything the
    /// server holds below it is something recorded, unchanged (folder ETags do not follow
    /// their contents on Apache, so its own version proves nothing); otherwise, and when the
    /// item itself changed, the delete is rejected (`deletionRejected`) and nothing happens.
    /// `scratchToken` names where a folder or bundle is set aside (see `deleteFolder`).
    public func deleteRemote(_ path: RemotePath, version: ETag?, item: ItemIdentifier, scratchToken: String? = nil,
                             operation: Int64?) async throws(ProviderError) {
        guard let record = try state.item(item) else {
            // No row says what a folder held when the plan was made, and a folder's own ETag
            // does not change with what is written deep inside it: deleted whole, another
            // client's files in it would go too. It is kept; the next pass decides again.
            if try await isFolderOnServer(path) {
                throw ProviderError(.deletionRejected, "\(path) is no longer recorded here; the folder is kept on the server and looked at again")
            }
            try await deleteIfPresent(path, version: version)
            try commit([], completing: operation, foldersChanged: false)
            return
        }
        if record.kind == .folder {
            try await deleteFolder(path, of: record, scratchToken: scratchToken ?? UUID().uuidString)
        } else if record.kind == .bundle {
            try await deleteBundle(path, version: version, scratchToken: scratchToken ?? UUID().uuidString)
        } else {
            try await deleteIfPresent(path, version: version)
        }
        try forget(item, operation: operation)
    }

    /// True when the server holds a folder (or a bundle) at `path`.
    private func isFolderOnServer(_ path: RemotePath) async throws(ProviderError) -> Bool {
        do {
            let kind = try await store.entry(at: path).kind
            return kind == .folder || kind == .bundle
        } catch where error.code == .noSuchItem {
            return false
        }
    }

    private func deleteIfPresent(_ path: RemotePath, version: ETag?) async throws(ProviderError) {
        do {
            try await store.delete(path, version: version)
        } catch where error.code == .noSuchItem {
            return  // gone already: a replay, or deleted there too
        } catch where error.code == .versionMismatch {
            throw ProviderError(.deletionRejected, "\(path) changed on the server since it was last synced; it is kept and will be brought back",
                                underlying: error.message)
        }
    }

    /// Deletes the folder `record` at `path` when the server holds nothing below it that is
    /// not recorded, unchanged. A check and then a DELETE would lose a file another client
    /// uploads between the two (seen: the two-client test lost a version so), and WebDAV has
    /// no "delete only if empty". So the folder is first set aside in one MOVE under a name
    /// no client writes to, checked there, and deleted only then; a write that comes later
    /// finds no folder and fails (its client makes the folder again). When the check fails,
    /// the folder goes back (or, its place taken meanwhile, stays as a conflict copy: see
    /// `cleanUpScratch`) and the delete is rejected.
    func deleteFolder(_ path: RemotePath, of record: ItemRecord, scratchToken: String) async throws(ProviderError) {
        try await requireSubtreeUnchanged(at: path, of: record)  // the common refusal, without a MOVE
        let scratch = try BundleScratch(beside: path, token: scratchToken)
        do {
            _ = try await store.move(path, to: scratch.aside, version: nil)
        } catch where error.code == .noSuchItem {
            // Gone already (a replay, or deleted there too) — unless the MOVE landed though
            // its answer was lost: sent again, it met 404.
            guard try await exists(scratch.aside) else { return }
        }
        // Another client may have moved the parent meanwhile: the folder set aside moved
        // along, and is checked and deleted where it is now.
        guard let there = try await locateAside(scratch.aside) else { throw asideGone(path) }
        do {
            try await requireSubtreeUnchanged(at: path, listedAt: there, of: record)
        } catch {
            let kept = try await cleanUpScratch(beside: path, token: scratchToken, base: nil, host: nil)
            let note = kept.isEmpty ? "" : "; the folder made again there meanwhile is kept, the old one as \(kept.map(\.description).joined(separator: ", "))"
            throw ProviderError(error.code, error.message + note, underlying: error.underlying)
        }
        try await removeAside(there, of: path)
    }

    /// Throws `deletionRejected` unless every remote entry below `path` is recorded below
    /// `folder` at the same place, of the same kind and (files, symlinks) the same version.
    /// With `listing`, the server's entries are listed there (the folder set aside) and
    /// compared as if they were below `path`.
    func requireSubtreeUnchanged(at path: RemotePath, listedAt listing: RemotePath? = nil,
                                 of folder: ItemRecord) async throws(ProviderError) {
        var recorded: [RemotePath: ItemRecord] = [:]
        var order: [RemotePath] = []  // parents first
        var pending: [(ItemIdentifier, RemotePath)] = [(folder.id, path)]
        while let (id, at) = pending.popLast() {
            for child in try state.children(of: id) {
                let childPath = at.child(child.name)
                recorded[childPath] = child
                order.append(childPath)
                if child.kind == .folder { pending.append((child.id, childPath)) }
            }
        }
        let entries: [RemoteEntry]
        do {
            let location = listing ?? path
            var listed = try await store.listing(below: location)
            listed.entries = try listed.complete(below: location)
            listed.unlisted = [:]
            if listing != nil {
                for index in listed.entries.indices {
                    listed.entries[index].path = listed.entries[index].path.replacingPrefix(location, with: path) ?? listed.entries[index].path
                }
            }
            if listed.hidesDotNames {
                try await addHiddenEntries(to: &listed, recorded: order, top: path, location: location)
                _ = try listed.complete(below: path)
            }
            entries = BundleManifest.collapse(listed.entries, rule: bundles).entries
        } catch where error.code == .noSuchItem {
            // Gone from where it was set aside: moved on (with a folder another client moved
            // meanwhile) and not checked, so not deleted either.
            guard let listing else { return }
            throw ProviderError(.deletionRejected, "\(path), set aside to be deleted, moved away from \(listing) while it was checked; it is looked at again")
        }
        for entry in entries {
            guard let known = recorded[entry.path], Placement.compatible(known.kind, remoteKind: entry.kind) else {
                throw ProviderError(.deletionRejected, "\(entry.path) was added on the server; the folder \(path) is kept")
            }
            if known.kind != .folder, !(entry.etag.map { e in known.remoteETag.map(e.sameValue(as:)) ?? false } ?? false) {
                throw ProviderError(.deletionRejected, "\(entry.path) changed on the server; the folder \(path) is kept")
            }
        }
    }

    /// Downloads the file at `path` into `destination` (a new file the caller owns, fsynced
    /// unless the caller syncs it itself: `TransferSlot.callerSyncs`),
    /// only if it still has `version`. Returns the version the bytes belong to.
    /// With `resuming`, `destination` may hold the start of `version` from a cut download,
    /// which the store goes on from when it can.
    public func download(_ path: RemotePath, version: ETag?, into destination: URL, resuming: Bool = false,
                         progress: TransferProgress? = nil) async throws(ProviderError) -> ETag? {
        if resuming { return try await store.download(path, version: version, resumingInto: destination, progress: progress) }
        return try await store.download(path, range: nil, version: version, to: destination, progress: progress)
    }
}

extension SyncProvider {
    /// Records that the replica moved the item to `path` locally (the remote already has it
    /// there). Its recorded versions stay the base ones.
    @discardableResult
    public func recordMove(of item: ItemIdentifier, to path: RemotePath, operation: Int64?) throws(ProviderError) -> ItemRecord {
        guard var record = try state.item(item) else {
            throw ProviderError(.noSuchItem, "item \(item) is not known to the engine")
        }
        record.parentID = try requireParent(of: path)
        record.name = path.name
        try commit([.upsert(record)], completing: operation, foldersChanged: record.kind == .folder)
        return record
    }
}
