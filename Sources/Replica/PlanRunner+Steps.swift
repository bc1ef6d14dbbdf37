import Glibc
import Foundation
import SyncEngine
import SystemCalls

/// One step of a plan: the guarded write on its side, then its record.
extension PlanRunner {
    /// Carries `step` out. `released`, when given, is called at most once, when the step no
    /// longer needs its transfer slot (a plain download whose bytes are written).
    func perform(_ step: SyncAction, operation: Int64?, temporary: URL?, scratch: String? = nil,
                 context: Context, progress: TransferProgress? = nil,
                 released: (@Sendable () -> Void)? = nil) async throws(ProviderError) {
        logger.debug("\(step.stepName) \(step.path)\(scratch.map { " (scratch token \($0))" } ?? "")")
        if try await performForBundle(step, operation: operation, temporary: temporary, scratch: scratch, context: context,
                                      progress: progress) {
            return
        }
        switch step {
        case .createRemoteFolder(let path, let item):
            try await createRemoteFolder(path, item: item, operation: operation)
        case .upload(let path, let condition, let source, let item):
            try await upload(path, condition: condition, source: source, item: item, operation: operation, progress: progress)
        case .createRemoteSymlink(let path, let target, let condition, let item):
            try await createRemoteSymlink(path, target: target, condition: condition, item: item, operation: operation)
        case .moveRemote(let from, let to, let version, let item):
            try await moveRemote(from: from, to: to, version: version, item: item, operation: operation)
            await materializeIfPinned(to, context: context)
        case .deleteRemote(let path, let version, let item):
            try requireSyncFolder(before: path, root: context.recorded[.root])
            try await deleteRemote(path, version: version, item: item, scratch: scratch, operation: operation)
        case .createLocalFolder(let path, let item):
            let stat = try folder.makeFolder(at: path)
            try provider.record(at: path, item: item, kind: .folder, remote: context.remote[path], local: stat,
                                operation: operation)
        case .download(let path, let version, let replacing, let item):
            try await download(path, version: version, replacing: replacing, item: item, operation: operation,
                               temporary: temporary!, context: context, progress: progress, released: released)
        case .createLocalSymlink(let path, let target, let replacing, let item):
            let stat = try folder.makeSymlink(at: path, target: target, replacing: replacing, temporary: temporary!)
            try provider.record(at: path, item: item, kind: .symlink, remote: context.remote[path], local: stat,
                                symlinkTarget: target, operation: operation)
        case .moveLocal(let from, let to, let expected, let item):
            try folder.move(from: from, to: to, expected: expected)
            try provider.recordMove(of: item, to: to, operation: operation)
            await materializeIfPinned(to, context: context)
        case .deleteLocal(let path, let expected, let item):
            if try !deleteLocal(path, expected: expected, item: item, operation: operation, context: context) {
                throw ProviderError(.versionMismatch, "\(folder.absolute(path)) held new or changed items; they are kept and synced next")
            }
        case .conflictCopy(let conflict):
            try await conflictCopy(conflict, operation: operation, progress: progress)
        case .compareContents(let path, let local, let remote, let item, let ifDifferent):
            try await compare(path, local: local, remote: remote, item: item, ifDifferent: ifDifferent,
                              operation: operation, temporary: temporary!, context: context, progress: progress)
        case .record(let item, let path, let kind, let local, let remote):
            try provider.record(at: path, item: item, kind: kind, remote: remote, local: local,
                                symlinkTarget: remote.symlinkTarget, operation: operation)
        case .forget(let item):
            try provider.forget(item, operation: operation)
        case .remoteNameWins(_, let localPath, let remotePath):
            logger.notice("\(localPath) was renamed here and to \(remotePath) on the server; the server's name wins")
        }
    }

    /// The item at `path`, which must still be of `kind` (and have `stat`, when given) as
    /// the plan saw it; otherwise the step is left to the next plan.
    func present(_ path: RemotePath, kind: ItemKind, stat: LocalStat? = nil) throws(ProviderError) -> LocalScanEntry {
        guard let now = folder.entry(at: path), now.kind == kind, stat.map({ $0 == now.stat }) ?? true else {
            throw changedSincePlan(path)
        }
        return now
    }

    /// Waits until the file's modification time is a timestamp tick in the past, then checks
    /// it still has `stat`. A write in the same tick as the one `stat` saw leaves inode, size
    /// and mtime as they were (the kernel's file times are coarse: 1 to 10 ms), so bytes
    /// read before it would be recorded under a stat that also stands for the bytes after
    /// it, and the difference would never be seen. Once the tick is over, every later write
    /// changes the mtime, which the read's own checks catch.
    func waitPastTimestamp(of path: RemotePath, _ stat: LocalStat) async throws(ProviderError) {
        let now = Int64((Date().timeIntervalSince1970 * 1e9).rounded())
        // Whole seconds: a file system with one-second times (or a time set by a tool).
        let tick: Int64 = stat.modificationTimeNanoseconds % 1_000_000_000 == 0 ? 1_000_000_000 : 10_000_000
        let wait = min(stat.modificationTimeNanoseconds + tick + 40_000_000 - now, 2_000_000_000)
        guard wait > 0 else { return }
        try? await Task.sleep(nanoseconds: UInt64(wait))
        _ = try present(path, kind: .file, stat: stat)
    }

    /// Throws (the step is decided again by the next pass, which stops sync when the sync
    /// folder is gone or replaced) unless the sync folder is still there as the folder
    /// recorded: `rm -rf` of it removes its files first and the folder last, and a plan made
    /// in between would delete on the server, one step after another, what it removed.
    func requireSyncFolder(before path: RemotePath, root: ItemRecord?) throws(ProviderError) {
        var st = stat()
        let there = lstat(folder.root, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR
        guard there, root?.local.map({ $0.inode == UInt64(st.st_ino) }) ?? true else {
            throw ProviderError(.versionMismatch, "the sync folder \(folder.root) went away while \(path) was to be deleted on the server; nothing is deleted there")
        }
    }

    func changedSincePlan(_ path: RemotePath) -> ProviderError {
        ProviderError(.versionMismatch, "\(folder.absolute(path)) changed since the plan was made; it is looked at again")
    }

    private func download(_ path: RemotePath, version: ETag?, replacing: LocalStat?, item: ItemIdentifier?,
                          operation: Int64?, temporary: URL, context: Context, progress: TransferProgress?,
                          released: (@Sendable () -> Void)?) async throws(ProviderError) {
        if replacing != nil { try folder.requireNoWriter(path, kind: .file) }
        var entry = context.remote[path] ?? RemoteEntry(path: path, kind: .file, size: 0, etag: version)
        // Known before the file is placed where a placeholder may be filled by its item's
        // identifier; else the record chooses it (the same row: `item`'s, else the file at
        // `path`, else a new one), and no state-DB read holds the transfer back.
        let id = placeholders.placesByItem
            ? try provider.identifierForDownload(at: path, item: item, fresh: ItemIdentifier(UUID().uuidString)) : item
        let bytes = remoteBytes(path, version: version, item: id, progress: progress)
        // The store hands the step's transfer slot back once the bytes are written (see
        // `TransferSlot`): what follows is disk work that overlaps the next transfers.
        let placed = try await Self.handingBackSlot(released) { () async throws(ProviderError) -> PlacedFile in
            try await placeholders.bringDown(entry, at: path, replacing: replacing, temporary: temporary, bytes: bytes)
        }
        entry.etag = placed.version ?? entry.etag
        if placed.state == .materialized { entry.size = placed.stat.size }
        // Recorded with the downloads that were placed meanwhile, in one transaction, off
        // the cooperative threads (a commit waits for the state DB's fsync).
        let file = SyncProvider.FileRecord(path: path, item: id, remote: entry, local: placed.stat,
                                           materialization: placed.state, operation: operation)
        _ = try await downloadRecords.submit(file).get()
    }

    /// Runs `body` with `released` as the store's way to hand the step's slot back, when the
    /// runner gave one.
    static func handingBackSlot<T>(_ released: (@Sendable () -> Void)?,
                                   _ body: () async throws(ProviderError) -> T) async throws(ProviderError) -> T {
        guard let released else { return try await body() }
        let result: Result<T, ProviderError> = await TransferSlot.$current.withValue(TransferSlot(released: released)) {
            do throws(ProviderError) { return .success(try await body()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// A placeholder moved into a pinned folder, on the server or here, comes down whole, as
    /// a file new there does (one below with a pin of its own, `unpinned`, stays as it is).
    /// One that cannot now stays a placeholder, and is said so; the others still come down,
    /// and the pinned files' download at the next start takes it up. One the server holds
    /// in a newer version than recorded is left to the plan's own download of it (pinned,
    /// it comes down whole), rather than fetching a version that is gone.
    func materializeIfPinned(_ path: RemotePath, context: Context) async {
        var placeholders: [(path: RemotePath, record: ItemRecord)] = []
        do throws(ProviderError) {
            guard try provider.isPinned(path), let id = try provider.itemID(at: path), let record = try provider.itemRecord(id) else { return }
            let below = record.kind == .folder ? try provider.files(atOrBelow: path) : [(path, record)]
            for file in below where file.record.materialization != .materialized {
                if let listed = context.remote[file.path]?.etag, let recorded = file.record.remoteETag, !listed.sameValue(as: recorded) {
                    logger.debug("\(file.path) was moved into a pinned folder; its new version comes down whole by its own step")
                    continue
                }
                if try provider.isPinned(file.path) { placeholders.append(file) }
            }
        } catch {
            logger.warning("cannot tell whether \(folder.absolute(path)) is pinned: \(error.message)")
            return
        }
        for file in placeholders {
            do throws(ProviderError) {
                _ = try await self.placeholders.materialize(file.path, bytes: remoteBytes(file.path, version: file.record.remoteETag,
                                                                                          item: file.record.id, progress: nil))
                logger.info("\(folder.absolute(file.path)) was moved into a pinned folder: downloaded whole")
            } catch {
                logger.warning("\(folder.absolute(file.path)) is pinned but cannot be downloaded now: \(error.message)")
            }
        }
    }

    /// Makes the file at `path` whole before the daemon reads it (to upload or compare it):
    /// the placeholder port fetches what a placeholder lacks, so no hole is read as zeros.
    func materializeForReading(_ path: RemotePath) async throws(ProviderError) {
        _ = try await placeholders.materialize(path, bytes: remoteBytes(path, version: nil, item: nil, progress: nil))
    }

    /// The engine's downloads of `version` of the file at `path`, for the placeholder port.
    func remoteBytes(_ path: RemotePath, version: ETag?, item: ItemIdentifier?, progress: TransferProgress?) -> RemoteBytes {
        let provider = provider
        return RemoteBytes(whole: { destination async throws(ProviderError) -> ETag? in
            try await provider.download(path, version: version, into: destination,
                                        resuming: LocalFolder.isResumablePart(destination.lastPathComponent), progress: progress)
        }, range: { range, file async throws(ProviderError) -> ByteRange in
            guard let item else { throw ProviderError(.noSuchItem, "\(path) has no item yet; its bytes come down whole") }
            return try await provider.fetchPartialContents(for: item, version: ItemVersion(content: version), minimalRange: range,
                                                           alignment: 1, intoDescriptor: file, progress: progress)
        }, item: item)
    }

    /// Returns false when something was kept (the row is forgotten all the same).
    private func deleteLocal(_ path: RemotePath, expected: LocalStat?, item: ItemIdentifier, operation: Int64?,
                             context: Context) throws(ProviderError) -> Bool {
        let removed = try folder.delete(path, expected: expected) { found in
            guard let record = context.recorded[found.path], record.kind == found.kind else { return false }
            return found.kind == .folder ? record.local.map { $0.sameInode(as: found.stat) } ?? true : record.local == found.stat
        }
        if !removed { logger.notice("\(folder.absolute(path)) was deleted on the server; what changed in it here is kept and uploaded again") }
        // What stays behind (new or changed here) has no row any more, so the next plan sees
        // it as new and brings it back to the server: an edit beats a delete.
        try provider.forget(item, operation: operation)
        return removed
    }

    /// Keeps the local version under the conflict-copy name on both sides.
    private func conflictCopy(_ conflict: ConflictCopy, operation: Int64?,
                              progress: TransferProgress?) async throws(ProviderError) {
        // A program still writing would go on writing into the copy while the server's
        // version takes the name: the copy waits until it is closed.
        if conflict.kind == .file || conflict.kind == .bundle { try folder.requireNoWriter(conflict.path, kind: conflict.kind) }
        let stat = try folder.move(from: conflict.path, to: conflict.copy, expected: conflict.local)
        logger.warning("conflict: \(conflict.path) changed on both sides; this machine's version is kept as \(conflict.copy)")
        // Listed from the moment the copy exists: an upload that fails now is retried as a new file.
        do { try provider.recordConflict(ConflictRecord(conflict)) } catch {
            logger.error("cannot add the conflict copy \(conflict.copy) to the conflict list: \(error.message)")
        }
        switch conflict.kind {
        case .folder, .bundle:
            try await provider.makeRemoteFolder(at: conflict.copy, item: nil, local: stat, operation: operation)
        case .symlink:
            try await provider.makeRemoteSymlink(at: conflict.copy, target: conflict.symlinkTarget ?? "",
                                                 condition: .mustNotExist, source: stat, item: nil, operation: operation)
        case .file:
            try await materializeForReading(conflict.copy)
            try await waitPastTimestamp(of: conflict.copy, stat)
            try await provider.upload(URL(fileURLWithPath: folder.absolute(conflict.copy)), to: conflict.copy,
                                      condition: .mustNotExist, source: stat, item: nil, operation: operation,
                                      progress: progress)
        }
    }

    /// Same bytes on both sides: record them as agreed. Different: keep both.
    private func compare(_ path: RemotePath, local: LocalStat, remote: ETag?, item: ItemIdentifier?,
                         ifDifferent: [SyncAction], operation: Int64?, temporary: URL,
                         context: Context, progress: TransferProgress?) async throws(ProviderError) {
        try await materializeForReading(path)
        try await waitPastTimestamp(of: path, local)
        let equal: Bool
        var etag: ETag?
        if let listed = context.remote[path], listed.etag.map({ e in remote.map(e.sameValue(as:)) ?? false }) ?? false,
           let offered = listed.checksums.flatMap({ ContentChecksum.parse($0).first }) {
            // The server's checksum of the version the plan saw: no download needed.
            equal = try folder.checksum(path, expected: local, algorithm: offered.algorithm) == offered.hex
            etag = remote
        } else {
            etag = try await provider.download(path, version: remote, into: temporary, progress: progress)
            do {
                equal = try folder.contentsEqual(path, expected: local, other: temporary)
            } catch {
                removeTemporary(temporary.path)
                throw error
            }
            removeTemporary(temporary.path)
        }
        if equal {
            var entry = context.remote[path] ?? RemoteEntry(path: path, kind: .file, size: local.size, etag: etag)
            entry.etag = etag ?? entry.etag
            try provider.record(at: path, item: item, kind: .file, remote: entry, local: local, operation: operation)
            return
        }
        for step in ifDifferent {
            do throws(ProviderError) {
                try await perform(step, operation: nil, temporary: step.needsTemporary ? temporary : nil, context: context)
            } catch {
                throw explained(error, of: step)
            }
        }
        try provider.complete(operation.map { [$0] } ?? [])
    }
}
