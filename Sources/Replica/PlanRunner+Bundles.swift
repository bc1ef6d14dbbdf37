import Glibc
import Foundation
import Synchronization
import SyncEngine

/// The steps of a plan that move a bundle: the whole directory as one item.
extension PlanRunner {
    /// Carries `step` out when it moves a bundle's contents (upload, download, conflict copy,
    /// comparison) and returns true; false for every other step.
    func performForBundle(_ step: SyncAction, operation: Int64?, temporary: URL?, scratch: String?,
                          context: Context, progress: TransferProgress?) async throws(ProviderError) -> Bool {
        switch step {
        case .upload(let path, let condition, let source, let item) where folder.entry(at: path)?.kind == .bundle:
            try await uploadBundle(path, condition: condition, source: source, item: item, operation: operation,
                                   scratch: scratch, progress: progress)
        case .download(let path, let version, let replacing, let item) where context.remote[path]?.kind == .bundle:
            try await downloadBundle(path, version: version, replacing: replacing, item: item, operation: operation,
                                     temporary: temporary!, progress: progress)
        case .conflictCopy(let conflict) where conflict.kind == .bundle:
            try await conflictCopyOfBundle(conflict, operation: operation, scratch: scratch, progress: progress)
        case .compareContents(let path, let local, let remote, let item, let ifDifferent) where context.remote[path]?.kind == .bundle:
            try await compareBundle(path, local: local, remote: remote, item: item, ifDifferent: ifDifferent,
                                    operation: operation, temporary: temporary!, scratch: scratch, context: context,
                                    progress: progress)
        default:
            return false
        }
        return true
    }

    /// The bundle at `path` as scanned now, with its manifest hashed; `versionMismatch`
    /// unless it still has `source`.
    func scannedBundle(_ path: RemotePath, source: LocalStat, item: ItemIdentifier?) throws(ProviderError) -> [BundleMember] {
        guard let now = folder.bundle(at: path), now.stat == source else { throw changedSincePlan(path) }
        let previous = try item.map { id throws(ProviderError) in try provider.bundleMembers(of: id) } ?? []
        return try now.manifest(root: folder.absolute(path), previous: previous)
    }

    /// A check that the bundle at `path` still has `source`, for the engine to run before it
    /// publishes the new version.
    func unchangedCheck(_ path: RemotePath, source: LocalStat) -> @Sendable () throws(ProviderError) -> Void {
        let folder = self.folder
        let changed = changedSincePlan(path)
        return { () throws(ProviderError) in
            guard folder.bundle(at: path)?.stat == source else { throw changed }
        }
    }

    /// createItem / modifyItem of a bundle, the directory as its contents.
    private func uploadBundle(_ path: RemotePath, condition: WriteCondition, source: LocalStat, item: ItemIdentifier?,
                              operation: Int64?, scratch: String?, progress: TransferProgress?) async throws(ProviderError) {
        let members = try scannedBundle(path, source: source, item: item)
        let directory = URL(fileURLWithPath: folder.absolute(path), isDirectory: true)
        let options = WriteOptions(journalEntry: operation, scratchToken: scratch, bundleUnchanged: unchangedCheck(path, source: source))
        let parent = try provider.itemID(at: path.parent)
        switch (condition, item) {
        case (.mustMatch(let base), let item?) where try provider.path(of: item) == path && parent != nil:
            let template = ItemTemplate(id: item, parentID: parent!, name: path.name, kind: .bundle, local: source,
                                        bundleMembers: members)
            _ = try await provider.modifyItem(template, baseVersion: ItemVersion(content: base), changedFields: .contents,
                                              contents: directory, options: options, progress: progress)
        case (.mustNotExist, nil) where parent != nil:
            let template = ItemTemplate(parentID: parent!, name: path.name, kind: .bundle, local: source, bundleMembers: members)
            _ = try await provider.createItem(basedOn: template, contents: directory, options: options, progress: progress)
        default:
            let contents = BundleContents(directory: directory, members: members, unchanged: unchangedCheck(path, source: source))
            try await provider.uploadBundle(contents, to: path, condition: condition, source: source, item: item,
                                            scratchToken: scratch ?? UUID().uuidString, operation: operation, progress: progress)
        }
    }

    /// Brings the remote bundle at `path` down whole into the directory `temporary`, only if
    /// it still has `version`. Returns its listing.
    private func fetchBundle(_ path: RemotePath, version: ETag?, into temporary: URL,
                             progress: TransferProgress?) async throws(ProviderError) -> (entry: RemoteEntry, members: [RemoteEntry]) {
        let listing = try await provider.bundleListing(at: path)
        if let version, listing.entry.etag?.sameValue(as: version) != true {
            throw ProviderError(.versionMismatch, "\(path) changed on the server again; it is looked at again")
        }
        guard mkdir(temporary.path, 0o755) == 0 else { throw LocalFolder.error(errno, "cannot create a folder beside \(folder.absolute(path))") }
        do throws(ProviderError) {
            let members = BundleManifest.relative(listing.members, below: path)
                .sorted { $0.key.components.count < $1.key.components.count }
            for (relative, entry) in members {
                let target = temporary.path + "/" + relative.description
                switch entry.kind {
                case .folder:
                    guard mkdir(target, 0o755) == 0 else { throw LocalFolder.error(errno, "cannot create \(target)") }
                case .symlink:
                    guard symlink(entry.symlinkTarget ?? "", target) == 0 else { throw LocalFolder.error(errno, "cannot create \(target)") }
                default:
                    break
                }
            }
            let files = members.filter { $0.value.kind == .file }
            let total = files.reduce(Int64(0)) { $0 + $1.value.size }
            let done = Mutex<Int64>(0)
            let provider = self.provider, folder = self.folder
            try await forEachConcurrently(files, width: max(1, transfers)) { (file) async throws(ProviderError) in
                let (relative, entry) = file
                let destination = URL(fileURLWithPath: temporary.path + "/" + relative.description)
                _ = try await provider.download(entry.path, version: entry.etag, into: destination, progress: nil)
                if let date = entry.modificationDate { folder.setModificationDate(destination.path, date) }
                let now = done.withLock { $0 += entry.size; return $0 }
                progress?(now, total)
            }
        } catch {
            removeTemporary(temporary.path)
            throw error
        }
        return listing
    }

    /// The manifest of `bundle` (whose directory is `root`; it is or goes at `path`), with the
    /// remote versions of `listing`.
    private func manifest(of bundle: LocalBundle, root: String, at path: RemotePath,
                          listing: (entry: RemoteEntry, members: [RemoteEntry])) throws(ProviderError) -> [BundleMember] {
        let remote = BundleManifest.relative(listing.members, below: path)
        var members = try bundle.manifest(root: root, previous: [])
        for index in members.indices { members[index].remoteETag = try remote[members[index].relative]?.etag }
        return members
    }

    /// fetchContents of a bundle: downloaded whole beside its place, renamed in.
    /// What is recorded is the tree as downloaded, scanned and hashed before it is renamed
    /// in (a rename changes no inode, size or mtime inside): an app writing into the new
    /// bundle right after is a change the next pass sees.
    private func downloadBundle(_ path: RemotePath, version: ETag?, replacing: LocalStat?, item: ItemIdentifier?,
                                operation: Int64?, temporary: URL, progress: TransferProgress?) async throws(ProviderError) {
        if replacing != nil { try folder.requireNoWriter(path, kind: .bundle) }
        let listing = try await fetchBundle(path, version: version, into: temporary, progress: progress)
        let built: LocalBundle, members: [BundleMember]
        do throws(ProviderError) {
            guard let scanned = LocalBundle.scan(at: temporary.path, path: path) else {
                throw ProviderError(.cannotSynchronize, "the downloaded bundle \(temporary.path) vanished before it was installed")
            }
            built = scanned
            members = try manifest(of: built, root: temporary.path, at: path, listing: listing)
        } catch {
            removeTemporary(temporary.path)
            throw error
        }
        try folder.installBundle(temporary, at: path, replacing: replacing)
        try provider.recordBundle(at: path, item: item, remote: listing.entry, local: built.stat, members: members,
                                  operation: operation)
    }

    /// The local bundle goes to its conflict-copy name on both sides, as a new bundle.
    private func conflictCopyOfBundle(_ conflict: ConflictCopy, operation: Int64?, scratch: String?,
                                      progress: TransferProgress?) async throws(ProviderError) {
        let stat = try folder.move(from: conflict.path, to: conflict.copy, expected: conflict.local)
        logger.warning("conflict: \(conflict.path) changed on both sides; this machine's version is kept as \(conflict.copy)")
        do { try provider.recordConflict(ConflictRecord(conflict)) } catch {
            logger.error("cannot add the conflict copy \(conflict.copy) to the conflict list: \(error.message)")
        }
        let members = try scannedBundle(conflict.copy, source: stat, item: nil)
        let contents = BundleContents(directory: URL(fileURLWithPath: folder.absolute(conflict.copy), isDirectory: true),
                                      members: members, unchanged: unchangedCheck(conflict.copy, source: stat))
        try await provider.uploadBundle(contents, to: conflict.copy, condition: .mustNotExist, source: stat, item: nil,
                                        scratchToken: scratch ?? UUID().uuidString, operation: operation, progress: progress)
    }

    /// Same members and bytes on both sides: recorded as agreed. Different: keep both.
    private func compareBundle(_ path: RemotePath, local: LocalStat, remote: ETag?, item: ItemIdentifier?,
                               ifDifferent: [SyncAction], operation: Int64?, temporary: URL, scratch: String?,
                               context: Context, progress: TransferProgress?) async throws(ProviderError) {
        let listing = try await fetchBundle(path, version: remote, into: temporary, progress: progress)
        let equal: Bool
        do throws(ProviderError) {
            equal = try folder.bundleEqual(path, expected: local, other: temporary)
        } catch {
            removeTemporary(temporary.path)
            throw error
        }
        removeTemporary(temporary.path)
        if equal, let bundle = folder.bundle(at: path), bundle.stat == local {
            try provider.recordBundle(at: path, item: item, remote: listing.entry, local: local,
                                      members: try manifest(of: bundle, root: folder.absolute(path), at: path, listing: listing),
                                      operation: operation)
            return
        }
        for step in ifDifferent {
            // The conflict copy's bundle upload uses this step's journaled token.
            do throws(ProviderError) {
                try await perform(step, operation: nil, temporary: step.needsTemporary ? folder.temporaryURL(beside: step.path) : nil,
                                  scratch: step.setsAsideRemotely(folder.bundles, recorded: context.recorded) ? scratch : nil,
                                  context: context)
            } catch {
                throw explained(error, of: step)
            }
        }
        try provider.complete(operation.map { [$0] } ?? [])
    }
}
