// Pin states and evictions as the state DB records them (DESIGN.md, "Dataless
// placeholders"; issue 15 item 7). A pin is kept on the item's row: `pinned` (always
// downloaded), `unpinned` (may be evicted), `inherited` (its folder decides), so a new
// child of a pinned folder is pinned without a row of its own. Durability contract: an
// eviction is recorded only after its punched file is fsynced, with the file's new stat and
// its empty range set in one transaction, so the daemon's own punch is never taken for a
// user's edit.
import Foundation

extension SyncProvider {
    /// True when the item at `path` is pinned, by its own pin or, when it inherits, by the
    /// nearest folder above with a pin of its own. A path with no record yet (a new remote
    /// file) inherits from its folder.
    public func isPinned(_ path: RemotePath) throws(ProviderError) -> Bool {
        var cursor: RemotePath? = path
        while let current = cursor, !current.isRoot {
            if let id = try itemID(at: current), let record = try state.item(id) {
                switch record.pinState {
                case .pinned: return true
                case .unpinned: return false
                case .inherited: break
                }
            }
            cursor = current.parent
        }
        return false
    }

    /// Gives the item at `path` the pin state `pin`; returns its record. Refused for a path
    /// with no record (not synced yet: it has nothing to pin to).
    @discardableResult
    public func setPin(_ pin: PinState, at path: RemotePath) throws(ProviderError) -> ItemRecord {
        guard let id = try itemID(at: path), var record = try state.item(id) else {
            throw ProviderError(.noSuchItem, "\(path) is not synced yet; pin it once it is")
        }
        record.pinState = pin
        try state.apply([.upsert(record)])
        return record
    }

    /// Records that the file `id` holds none of its bytes any more (punched and fsynced):
    /// dataless at its recorded version, no ranges. Its stat becomes `after` only when the
    /// recorded one is `before`. Refused when the recorded version is not `version` any more
    /// (the file was replaced meanwhile).
    public func recordEviction(of id: ItemIdentifier, version: ETag?, before: LocalStat, after: LocalStat) throws(ProviderError) {
        guard var record = try state.item(id), record.kind == .file, Self.same(record.remoteETag, version) else {
            throw ProviderError(.versionMismatch, "item \(id) changed while it was evicted")
        }
        record.materialization = .dataless
        if record.local == before { record.local = after }
        try state.apply([.upsert(record), .setHydratedRanges(id, RangeSet(), version: version)])
    }

    /// The recorded files at `path` or below it, with their paths.
    public func files(atOrBelow path: RemotePath) throws(ProviderError) -> [(path: RemotePath, record: ItemRecord)] {
        var found: [(path: RemotePath, record: ItemRecord)] = []
        for record in try state.allItems() where record.kind == .file {
            guard let there = try self.path(of: record.id), there == path || there.isDescendant(of: path) else { continue }
            found.append((there, record))
        }
        return found.sorted { $0.path < $1.path }
    }
}
