import Foundation

/// Which remote the records describe (durability: the switch to another remote is one
/// transaction).
extension SyncProvider {
    /// Makes sure the state DB describes the remote at `location` (the domain's normalised
    /// remote). Runs before anything is replayed or planned.
    ///
    /// A DB that describes another remote (the domain's `remote` was changed, or the
    /// server's root was replaced) loses its item rows, its journal and its sync anchor in
    /// the transaction that records the new identity, so a crash at any point leaves
    /// either the old rows with the old identity (the next pass switches again) or no
    /// rows with the new one (a first sync). With no rows the planner sees every item on
    /// either side as new: same name and bytes are agreed, same name and other bytes make
    /// a conflict copy, everything else is copied across, and nothing is deleted.
    /// - Parameter discarding: called, before that transaction, with each journal entry it
    ///   drops (the replica removes the temporary files they name).
    /// - Returns: the change, when there was one.
    /// - Throws: `cannotSynchronize` when the same location now has another, empty root.
    public func bindRemote(location: String,
                           discarding: (PendingOperation) -> Void) async throws(ProviderError) -> RemoteChange? {
        let current = RemoteIdentity(location: location, rootFileID: try await store.entry(at: .root).fileID)
        switch RemoteIdentity.verdict(recorded: try state.remoteIdentity(), current: current) {
        case .same:
            return nil
        case .record:
            try state.apply([.setRemoteIdentity(current)])
            return nil
        case .changed(let before):
            if before.location == current.location, try await store.children(of: .root).isEmpty {
                // The same place with another, empty root: far more often a disk that is not
                // mounted under the store (or a server whose volume is missing) than a new
                // remote. Merging would upload everything into the wrong place.
                throw ProviderError(.cannotSynchronize,
                                    "the remote \(current.location) is empty and is not the one synced before (its root was replaced: \(before) before, \(current) now); sync is stopped so that nothing is uploaded to the wrong place. If it is a mount point, mount it again; to upload this folder to the new, empty remote, stop tidesync and move the domain's state DB away")
            }
            let journal = try state.pendingOperations()
            journal.forEach(discarding)
            try state.apply(forgetting(try state.allItems(), journal: journal) + [.setRemoteIdentity(current)])
            folders.forgetAll()
            return RemoteChange(from: before, to: current)
        }
    }

    /// The changes that drop every row describing the old remote: the items below the root
    /// (with their ranges and manifests), the root's remote version, the journal and the
    /// sync anchor. The root keeps its local inode (the sync folder is the same) and the
    /// conflict list stays (it is history).
    func forgetting(_ items: [ItemRecord], journal: [PendingOperation]) -> [StateChange] {
        // Parents come first: the removal of a folder takes its subtree, and the removal of
        // an item already gone is a no-op; rows whose chain does not reach the root go too.
        var changes: [StateChange] = items.filter { $0.id != .root }.map { .remove($0.id) }
        if var root = items.first(where: { $0.id == .root }) {
            (root.remoteETag, root.remoteFileID, root.contentHash) = (nil, nil, nil)
            changes.append(.upsert(root))
        }
        changes += journal.map { .completeOperation($0.id) }
        return changes + [.setSyncAnchor(nil)]
    }
}
