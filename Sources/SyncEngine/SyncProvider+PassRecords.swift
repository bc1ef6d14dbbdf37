import Foundation

/// The records a pass reads and writes, over the engine's state store.
extension SyncProvider: PassRecords {
    public func items() throws(ProviderError) -> [ItemRecord] {
        try state.allItems()
    }

    public func itemRecord(_ id: ItemIdentifier) throws(ProviderError) -> ItemRecord? {
        try state.item(id)
    }

    public func children(of id: ItemIdentifier) throws(ProviderError) -> [ItemRecord] {
        try state.children(of: id)
    }

    public func syncAnchor() throws(ProviderError) -> SyncAnchor? {
        try state.syncAnchor()
    }

    public func bundleMembers(of id: ItemIdentifier) throws(ProviderError) -> [BundleMember] {
        try state.bundleMembers(of: id)
    }

    public func recordSyncFolder(_ root: ItemRecord) throws(ProviderError) {
        try state.apply([.upsert(root)])
    }

    public func recordBirthTimes(_ stats: [ItemIdentifier: LocalStat]) throws(ProviderError) {
        try state.apply(stats.map { .setLocalBirth($0.key, $0.value) })
    }

    public func unreadableFolders() throws(ProviderError) -> [UnreadableFolder] {
        try state.unreadableFolders()
    }

    public func recordUnreadableFolders(_ folders: [UnreadableFolder]) throws(ProviderError) {
        try state.recordUnreadableFolders(folders)
    }

    public func recordHeldDeletions(_ held: DeletionHold?) throws(ProviderError) {
        try state.recordHeldDeletions(held?.summary)
    }
}
