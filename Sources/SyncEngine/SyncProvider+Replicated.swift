import Foundation

/// The File Provider calls, which find remote paths from the state DB and then run the
/// same guarded steps a reconciliation plan runs.
extension SyncProvider: ReplicatedProvider {
    public func item(for id: ItemIdentifier) async throws(ProviderError) -> Item {
        guard let record = try state.item(id) else {
            throw ProviderError(.noSuchItem, "item \(id) is not known to the engine")
        }
        return Item(record: record, path: try requirePath(of: id))
    }

    public func createItem(basedOn template: ItemTemplate, contents: URL?, options: WriteOptions,
                           progress: TransferProgress?) async throws(ProviderError) -> Item {
        let path = try requirePath(of: template.parentID).appending(template.name)
        let record = try await write(template, at: path, condition: .mustNotExist, contents: contents,
                                     options: options, progress: progress)
        return Item(record: record, path: path)
    }

    public func modifyItem(_ template: ItemTemplate, baseVersion: ItemVersion, changedFields: ItemFields,
                           contents: URL?, options: WriteOptions, progress: TransferProgress?) async throws(ProviderError) -> Item {
        guard let id = template.id, let current = try state.item(id) else {
            throw ProviderError(.noSuchItem, "modifyItem needs an item the engine knows")
        }
        var path = try requirePath(of: id)
        if !changedFields.isDisjoint(with: [.filename, .parentItemIdentifier]) {
            let destination = try requirePath(of: template.parentID).appending(template.name)
            if destination != path {
                // A move that is the whole change completes the journal entry; one followed
                // by new contents leaves that to the upload.
                let last = !changedFields.contains(.contents) || current.kind == .folder
                try await moveRemote(from: path, to: destination, version: current.kind == .folder ? nil : baseVersion.content,
                                     item: id, operation: last ? options.journalEntry : nil)
                path = destination
            }
        }
        guard changedFields.contains(.contents), current.kind != .folder else {
            return try await item(for: id)
        }
        guard let base = baseVersion.content else {
            throw ProviderError(.versionMismatch, "\(path) has no remote version to base a modification on")
        }
        let record = try await write(template, at: path, condition: .mustMatch(base), contents: contents,
                                     options: options, progress: progress)
        return Item(record: record, path: path)
    }

    public func deleteItem(_ id: ItemIdentifier, baseVersion: ItemVersion, options: WriteOptions) async throws(ProviderError) {
        guard let record = try state.item(id) else {
            if let entry = options.journalEntry { try state.apply([.completeOperation(entry)]) }
            return
        }
        let path = try requirePath(of: id)
        try await deleteRemote(path, version: record.kind == .folder ? nil : baseVersion.content, item: id,
                               scratchToken: options.scratchToken, operation: options.journalEntry)
    }

    public func fetchContents(for id: ItemIdentifier, version: ItemVersion?, into destination: URL,
                              progress: TransferProgress?) async throws(ProviderError) -> FetchResult {
        let path = try requirePath(of: id)
        let etag = try await download(path, version: version?.content, into: destination, progress: progress)
        return FetchResult(contents: destination, version: ItemVersion(content: etag ?? version?.content))
    }

    public func fetchPartialContents(for id: ItemIdentifier, version: ItemVersion, minimalRange: ByteRange,
                                     alignment: Int64, into destination: URL,
                                     progress: TransferProgress?) async throws(ProviderError) -> PartialFetchResult {
        let range = try await fetchRange(of: id, version: version, minimalRange: minimalRange, alignment: alignment) {
            path, range, content throws(ProviderError) in
            _ = try await store.download(path, range: range, version: content, to: destination, progress: progress)
            return range
        }
        return PartialFetchResult(contents: destination, range: range, version: version)
    }

    /// `fetchPartialContents` written into the open file `descriptor` at the range's own
    /// offsets instead of a new file (a placeholder filled in place). Nothing is flushed:
    /// the caller fsyncs before it counts on the bytes. Returns the range written.
    public func fetchPartialContents(for id: ItemIdentifier, version: ItemVersion, minimalRange: ByteRange,
                                     alignment: Int64, intoDescriptor descriptor: Int32,
                                     progress: TransferProgress?) async throws(ProviderError) -> ByteRange {
        try await fetchRange(of: id, version: version, minimalRange: minimalRange, alignment: alignment) {
            path, range, content throws(ProviderError) in
            let written = try await store.download(path, range: range, version: content, intoDescriptor: descriptor, progress: progress)
            return ByteRange(offset: range.offset, length: written)
        }
    }

    /// Checks a partial fetch's request, widens it to `alignment`, and runs `download` on
    /// the item's path with the range and the version's ETag; a version the store no longer
    /// holds is `versionNoLongerAvailable` (strict versioning).
    private func fetchRange(of id: ItemIdentifier, version: ItemVersion, minimalRange: ByteRange, alignment: Int64,
                            _ download: (RemotePath, ByteRange, ETag) async throws(ProviderError) -> ByteRange)
        async throws(ProviderError) -> ByteRange {
        guard alignment > 0, alignment & (alignment - 1) == 0 else {
            throw ProviderError(.cannotSynchronize, "the alignment \(alignment) is not a power of two")
        }
        guard let record = try state.item(id), let content = version.content else {
            throw ProviderError(.noSuchItem, "item \(id) has no remote version to fetch")
        }
        let range = minimalRange.aligned(to: alignment, fileSize: record.size)
        let path = try requirePath(of: id)
        do {
            return try await download(path, range, content)
        } catch where error.code == .versionMismatch {
            throw ProviderError(.versionNoLongerAvailable, "\(path) changed on the server; version \(content) is gone",
                                underlying: error.message)
        }
    }

    public func changes(since anchor: SyncAnchor?) async throws(ProviderError) -> ChangeBatch {
        try await changes(since: anchor, tree: RecordTree(try state.allItems()))
    }

    /// `changes(since:)` against `records`, the state DB's rows the caller already read and
    /// made a tree (a pass does that once for this and for its plan), over `walked` when the
    /// caller walked already (`walkMatching`).
    /// `context` goes into the listing's digest (`ListingDigest`), as in `walkMatching`.
    public func changes(since anchor: SyncAnchor?, tree records: RecordTree,
                        walked: WalkedListing? = nil, context: String = "") async throws(ProviderError) -> ChangeBatch {
        var walk = if let walked { walked.listing } else { try await store.listing(below: .root) }
        let digest = walk.hidesDotNames || !walk.unlisted.isEmpty ? nil : walked?.digest ?? ListingDigest(walk, context: context)
        if walk.hidesDotNames {
            try await addHiddenEntries(to: &walk, recorded: records.tree.paths)
            try await addCollidedEntries(to: &walk)
        }
        // A folder inside a bundle that could not be listed leaves the whole bundle unknown.
        let unlisted = Dictionary(walk.unlisted.map { (bundles.enclosingBundle(of: $0.key) ?? $0.key, $0.value) },
                                  uniquingKeysWith: { first, _ in first })
        let unknown = UnknownSubtrees(unlisted.keys)
        let listing = BundleManifest.collapse(walk.entries, rule: bundles)
        var entries = unknown.isEmpty ? listing.entries : listing.entries.filter { !unknown.contains($0.path) }
        var snapshot: [RemotePath: RemoteEntry] = [:]
        snapshot.reserveCapacity(entries.count)
        for entry in entries { snapshot[entry.path] = entry }
        let tree = records.tree
        var updated: [RemoteEntry] = []
        var deleted: [ItemIdentifier] = []
        var recorded: Set<RemotePath> = []
        let waits = swapWaits.withLock { $0 }
        let now = clock.now()
        var stillWaiting: [RemotePath: Date] = [:]
        defer { swapWaits.withLock { $0 = stillWaiting } }
        for index in tree.indices {
            let record = tree[index], path = tree.paths[index]
            recorded.insert(path)
            if unknown.contains(path) {
                // Not listed: taken as recorded, never as deleted.
                snapshot[path] = RemoteEntry(recorded: record, at: path)
                continue
            }
            if snapshot[path] == nil, record.kind == .bundle, record.remoteETag != nil, listing.swapping.contains(path.parent) {
                // Another client may be between the two moves that replace it (WebDAV has
                // no exchange): taken as unchanged until a walk finds it, finds it gone with
                // nothing set aside, or `swapWait` has passed since it was first missed (kept
                // as missed after that, so a deletion not applied at once does not wait again).
                let since = waits[path] ?? now
                stillWaiting[path] = since
                if now.timeIntervalSince(since) >= Self.swapWait {
                    deleted.append(record.id)
                    continue
                }
                let kept = RemoteEntry(path: path, kind: .bundle, size: record.size, etag: record.remoteETag,
                                       fileID: record.remoteFileID)
                snapshot[path] = kept
                entries.append(kept)
                continue
            }
            guard let entry = snapshot[path] else {
                if record.remoteETag != nil || record.kind == .folder { deleted.append(record.id) }
                continue
            }
            let same = record.kind == .folder || (entry.etag.map { e in record.remoteETag.map(e.sameValue(as:)) ?? false } ?? false)
            // A symlink's target is a property of its own: changed with PROPPATCH, it leaves
            // the version as it was, and the planner compares targets too.
            let retargeted = record.kind == .symlink && entry.kind == .symlink && entry.symlinkTarget != record.symlinkTarget
            if !same || retargeted || !Placement.compatible(record.kind, remoteKind: entry.kind) { updated.append(entry) }
        }
        updated += entries.filter { !recorded.contains($0.path) }
        // Without server-side change tracking (Apache has no sync-collection) the state DB is
        // what the anchor stands for: a batch is always relative to what was recorded. A walk
        // that finds nothing changed keeps the anchor it had and writes nothing, so an idle
        // poll costs the state DB no commit.
        let next: SyncAnchor
        if let anchor, updated.isEmpty, deleted.isEmpty, unlisted.isEmpty {
            next = anchor
        } else {
            next = SyncAnchor("walk:\(Int64(clock.now().timeIntervalSince1970 * 1000)):\(entries.count)")
            try state.apply([.setSyncAnchor(next)])
        }
        var batch = ChangeBatch(snapshot: snapshot, updated: updated, deleted: deleted, anchor: next)
        batch.unlisted = unlisted
        batch.listingDigest = stillWaiting.isEmpty && listing.swapping.isEmpty ? digest : nil
        return batch
    }

    /// Creates or replaces `template` at `path` under `condition`.
    private func write(_ template: ItemTemplate, at path: RemotePath, condition: WriteCondition, contents: URL?,
                       options: WriteOptions, progress: TransferProgress?) async throws(ProviderError) -> ItemRecord {
        do {
            return try await writeItem(template, at: path, condition: condition, contents: contents, options: options, progress: progress)
        } catch where error.code == .filenameCollision {
            noteCollision(at: path)
            throw error
        }
    }

    private func writeItem(_ template: ItemTemplate, at path: RemotePath, condition: WriteCondition, contents: URL?,
                           options: WriteOptions, progress: TransferProgress?) async throws(ProviderError) -> ItemRecord {
        let operation = options.journalEntry
        switch template.kind {
        case .folder:
            return try await makeRemoteFolder(at: path, item: template.id, local: template.local, operation: operation)
        case .symlink:
            return try await makeRemoteSymlink(at: path, target: template.symlinkTarget ?? "", condition: condition,
                                               source: template.local, item: template.id, operation: operation)
        case .bundle:
            guard let contents, let local = template.local, let members = template.bundleMembers else {
                throw ProviderError(.cannotSynchronize, "\(path): a bundle needs its directory, its members and its local stat")
            }
            let bundle = BundleContents(directory: contents, members: members, unchanged: options.bundleUnchanged ?? {})
            return try await uploadBundle(bundle, to: path, condition: condition, source: local, item: template.id,
                                          scratchToken: options.scratchToken ?? UUID().uuidString, operation: operation,
                                          progress: progress)
        case .file:
            guard let contents, let local = template.local else {
                throw ProviderError(.cannotSynchronize, "\(path): a file needs its contents and their local stat")
            }
            return try await upload(contents, to: path, condition: condition, source: local, item: template.id,
                                    operation: operation, progress: progress)
        }
    }
}
