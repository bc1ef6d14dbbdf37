import Foundation
import SyncEngine

/// The remote a domain is configured with, as the pass checks it against the state DB.
public struct RemoteBinding: Sendable, Equatable {
    /// The domain's name, for messages.
    public var domain: String
    /// The normalised location (see `RemoteIdentity.location`).
    public var location: String

    public init(domain: String, location: String) {
        self.domain = domain
        self.location = location
    }
}

/// A domain pointed at another remote: what the pass did about it, for logs and status.
public struct RemoteChange: Sendable, Equatable {
    /// The remote the state DB described.
    public var from: RemoteIdentity
    /// The remote the domain is configured with now.
    public var to: RemoteIdentity

    /// The sentence logged and shown in status.
    public func message(domain: String) -> String {
        "the remote of domain \(domain) changed from \(from) to \(to): merging both trees as a first sync; nothing is deleted"
    }
}

extension SyncPass {
    /// Makes sure the state DB describes the remote this pass reads (durability: the switch
    /// to another remote is one transaction). Runs before anything is replayed or planned.
    ///
    /// A DB that describes another remote (the domain's `remote` was changed, or the
    /// server's root was replaced) loses its item rows, its journal and its sync anchor in
    /// the transaction that records the new identity, so a crash at any point leaves
    /// either the old rows with the old identity (the next pass switches again) or no
    /// rows with the new one (a first sync). With no rows the planner sees every item on
    /// either side as new: same name and bytes are agreed, same name and other bytes make
    /// a conflict copy, everything else is copied across, and nothing is deleted.
    /// - Returns: the change, when there was one.
    func checkRemoteIdentity() async throws(ProviderError) -> RemoteChange? {
        guard let binding = remote else { return nil }
        let state = runner.provider.state
        let rootID = try await runner.provider.store.entry(at: .root).fileID
        let current = RemoteIdentity(location: binding.location, rootFileID: rootID)
        switch RemoteIdentity.verdict(recorded: try state.remoteIdentity(), current: current) {
        case .same:
            return nil
        case .record:
            try state.apply([.setRemoteIdentity(current)])
            return nil
        case .changed(let before):
            if before.location == current.location, try await runner.provider.store.children(of: .root).isEmpty {
                // The same place with another, empty root: far more often a disk that is not
                // mounted under the store (or a server whose volume is missing) than a new
                // remote. Merging would upload everything into the wrong place.
                throw ProviderError(.cannotSynchronize,
                                    "the remote \(current.location) is empty and is not the one synced before (its root was replaced: \(before) before, \(current) now); sync is stopped so that nothing is uploaded to the wrong place. If it is a mount point, mount it again; to upload this folder to the new, empty remote, stop tidesync and move the domain's state DB away")
            }
            let change = RemoteChange(from: before, to: current)
            logger.warning("\(change.message(domain: binding.domain))")
            try state.apply(forgetting(try state.allItems(), journal: try state.pendingOperations()) + [.setRemoteIdentity(current)])
            return change
        }
    }

    /// The changes that drop every row describing the old remote: the items below the root
    /// (with their ranges and manifests), the root's remote version, the journal (its local
    /// temporaries are removed first; nothing in it may be replayed against the new
    /// remote) and the sync anchor. The root keeps its local inode (the sync folder is the
    /// same) and the conflict list stays (it is history).
    func forgetting(_ items: [ItemRecord], journal: [PendingOperation]) -> [StateChange] {
        // Parents come first: the removal of a folder takes its subtree, and the removal of
        // an item already gone is a no-op; rows whose chain does not reach the root go too.
        var changes: [StateChange] = items.filter { $0.id != .root }.map { .remove($0.id) }
        if var root = items.first(where: { $0.id == .root }) {
            (root.remoteETag, root.remoteFileID, root.contentHash) = (nil, nil, nil)
            changes.append(.upsert(root))
        }
        for operation in journal {
            let entry = try? JSONDecoder().decode(PlanRunner.JournalEntry.self, from: operation.payload)
            if let temporary = entry?.temporary { runner.removeTemporary(temporary) }
            changes.append(.completeOperation(operation.id))
        }
        return changes + [.setSyncAnchor(nil)]
    }
}
