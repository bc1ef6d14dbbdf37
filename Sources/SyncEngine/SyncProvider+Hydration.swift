// What files on demand records (DESIGN.md, "Dataless placeholders"). Durability contract:
// the replica calls `recordHydration` only after the bytes of the ranges it names are
// fsynced, so a recorded range is on disk; the range set, the version it belongs to, the
// item's materialization and its local stat are written in one transaction, so the daemon's
// own write into a placeholder is never taken for a user's edit and never recorded apart
// from its ranges.
import Foundation

/// A placeholder as the state DB knows it: a dataless or partial file.
public struct RecordedPlaceholder: Sendable, Equatable {
    public var record: ItemRecord
    /// Where it is, below the domain root.
    public var path: RemotePath
    /// The bytes on disk that belong to `record.remoteETag`; empty when the recorded ranges
    /// belong to another version (stale: fetched again).
    public var present: RangeSet

    public init(record: ItemRecord, path: RemotePath, present: RangeSet) {
        self.record = record
        self.path = path
        self.present = present
    }
}

extension SyncProvider {
    /// The identifier a download at `path` is recorded under: the one `record(at:…)` will
    /// choose (`item`'s row, else the row of that kind at `path`, else `fresh`).
    public func identifierForDownload(at path: RemotePath, item: ItemIdentifier?,
                                      fresh: @autoclosure () -> ItemIdentifier) throws(ProviderError) -> ItemIdentifier {
        // `item` when it has a row (or when nothing else can be chosen), else the file at `path`.
        guard let parent = try itemID(at: path.parent) else { return item ?? fresh() }
        let found = try state.item(item, andChildOf: parent, named: path.name)
        if found.byID == nil, let there = found.child, there.kind == .file { return there.id }
        return item ?? fresh()
    }

    /// Records that `present` of version `version` of the file `id` is on disk (fsynced),
    /// with what the file holds now, in one transaction. The local stat becomes `after` only
    /// when the recorded one is `before` (the daemon's write, its mtime restored); a stat the
    /// user changed meanwhile stays recorded as it was, so the edit is still seen. Nothing is
    /// written when the item is gone or a newer version was recorded since (its ranges are
    /// stale). A whole file keeps no ranges. Within one version what is recorded only grows:
    /// fills of one file end in any order, and a report that lags behind another (a smaller
    /// range set, or partial after whole) adds to it instead of taking its place.
    public func recordHydration(of id: ItemIdentifier, present: RangeSet, version: ETag?, holding materialization: Materialization,
                                before: LocalStat, after: LocalStat) throws(ProviderError) {
        guard var record = try state.item(id), record.kind == .file else { return }
        guard Self.same(record.remoteETag, version) else { return }
        var ranges = present
        let known = try state.hydratedRanges(of: id)
        if Self.same(known.version, version) { known.ranges.ranges.forEach { ranges.insert($0) } }
        let whole = record.materialization == .materialized || materialization == .materialized
            || ranges.contains(ByteRange(offset: 0, length: record.size))
        record.materialization = whole ? .materialized : ranges.byteCount == 0 ? .dataless : .partial
        if record.local == before { record.local = after }
        try state.apply([.upsert(record), .setHydratedRanges(id, whole ? RangeSet() : ranges, version: version)])
    }

    /// Every file recorded as dataless or partial, with its path and the ranges of its
    /// recorded version on disk.
    public func recordedPlaceholders() throws(ProviderError) -> [RecordedPlaceholder] {
        var result: [RecordedPlaceholder] = []
        for record in try state.allItems() where record.kind == .file && record.materialization != .materialized {
            guard let path = try path(of: record.id) else { continue }
            let hydrated = try state.hydratedRanges(of: record.id)
            let present = Self.same(hydrated.version, record.remoteETag) ? hydrated.ranges : RangeSet()
            result.append(RecordedPlaceholder(record: record, path: path, present: present))
        }
        return result
    }

    static func same(_ one: ETag?, _ other: ETag?) -> Bool {
        switch (one, other) {
        case (nil, nil): return true
        case (let one?, let other?): return one.sameValue(as: other)
        default: return false
        }
    }
}
