import Foundation
@testable import StateDatabase
import SyncEngine
import SyncModel
import Testing

/// What files on demand records in the real state DB through the engine: a placeholder's
/// ranges with the version they belong to, its materialization and its stat in one
/// transaction; a user's edit is never overwritten by the daemon's stat; a new version's
/// placeholder inherits no ranges.
@Suite struct HydrationRecordTests {
    static let path = try! RemotePath(["movie.mkv"])
    static let made = LocalStat(inode: 77, size: 10 << 20, modificationTimeNanoseconds: 1_600_000_000_000_000_000)
    static func mib(_ offset: Int64, _ length: Int64) -> ByteRange { ByteRange(offset: offset << 20, length: length << 20) }

    /// A dataless placeholder of version `v1` recorded as the runner records it.
    static func placeholder(_ provider: SyncProvider, version: String = "v1") throws -> ItemRecord {
        try provider.record(at: path, item: nil, kind: .file,
                            remote: RemoteEntry(path: path, kind: .file, size: 10 << 20, etag: ETag(value: version)),
                            local: made, materialization: .dataless, operation: nil)
    }

    @Test func aHydratedRangeIsRecordedWithItsVersionStateAndStatTogether() throws {
        try withStateDatabase { database in
            let provider = SyncProvider(store: InMemoryRemoteStore(), state: database)
            let item = try Self.placeholder(provider)
            let present = RangeSet([Self.mib(2, 1)])
            try provider.recordHydration(of: item.id, present: present, version: ETag(value: "v1", isWeak: true),
                                         holding: .partial, before: Self.made, after: Self.made)
            #expect(try database.item(item.id)?.materialization == .partial)
            #expect(try database.hydratedRanges(of: item.id).ranges == present)
            #expect(try database.hydratedRanges(of: item.id).version?.value == "v1")
            #expect(try provider.recordedPlaceholders() == [RecordedPlaceholder(record: try #require(try database.item(item.id)),
                                                                                 path: Self.path, present: present)])

            try provider.recordHydration(of: item.id, present: RangeSet([Self.mib(0, 10)]), version: ETag(value: "v1"),
                                         holding: .materialized, before: Self.made, after: Self.made)
            #expect(try database.item(item.id)?.materialization == .materialized)
            #expect(try database.hydratedRanges(of: item.id).ranges == RangeSet(), "a whole file keeps ranges")
            #expect(try provider.recordedPlaceholders().isEmpty)
        }
    }

    /// Two fills of one file end together and report in the other order: the later report
    /// of the earlier fill (a smaller set, still partial) must not undo the whole file.
    @Test func aReportThatLagsBehindAddsToWhatIsRecordedAndNeverUndoesIt() throws {
        try withStateDatabase { database in
            let provider = SyncProvider(store: InMemoryRemoteStore(), state: database)
            let item = try Self.placeholder(provider)
            try provider.recordHydration(of: item.id, present: RangeSet([Self.mib(4, 1)]), version: ETag(value: "v1"),
                                         holding: .partial, before: Self.made, after: Self.made)
            try provider.recordHydration(of: item.id, present: RangeSet([Self.mib(0, 1)]), version: ETag(value: "v1"),
                                         holding: .partial, before: Self.made, after: Self.made)
            #expect(try database.hydratedRanges(of: item.id).ranges == RangeSet([Self.mib(0, 1), Self.mib(4, 1)]))
            try provider.recordHydration(of: item.id, present: RangeSet([Self.mib(0, 10)]), version: ETag(value: "v1"),
                                         holding: .materialized, before: Self.made, after: Self.made)
            try provider.recordHydration(of: item.id, present: RangeSet([Self.mib(0, 9)]), version: ETag(value: "v1"),
                                         holding: .partial, before: Self.made, after: Self.made)
            #expect(try database.item(item.id)?.materialization == .materialized, "a lagging report undid the whole file")
            #expect(try database.hydratedRanges(of: item.id).ranges == RangeSet())
        }
    }

    @Test func aStatTheUserChangedStaysRecordedAsItWasSoTheEditIsSeen() throws {
        try withStateDatabase { database in
            let provider = SyncProvider(store: InMemoryRemoteStore(), state: database)
            let item = try Self.placeholder(provider)
            var edited = Self.made
            edited.modificationTimeNanoseconds += 5_000_000
            try provider.recordHydration(of: item.id, present: RangeSet([Self.mib(0, 1)]), version: ETag(value: "v1"),
                                         holding: .partial, before: edited, after: edited)
            #expect(try database.item(item.id)?.local == Self.made, "the user's edit was recorded as agreed")
            #expect(try database.hydratedRanges(of: item.id).ranges == RangeSet([Self.mib(0, 1)]))

            var moved = Self.made
            moved.modificationTimeNanoseconds += 1
            try provider.recordHydration(of: item.id, present: RangeSet([Self.mib(0, 2)]), version: ETag(value: "v1"),
                                         holding: .partial, before: Self.made, after: moved)
            #expect(try database.item(item.id)?.local == moved, "the daemon's own write was not recorded with its stat")
        }
    }

    @Test func rangesOfAnOlderVersionAreNeitherRecordedNorInherited() throws {
        try withStateDatabase { database in
            let provider = SyncProvider(store: InMemoryRemoteStore(), state: database)
            let item = try Self.placeholder(provider)
            try provider.recordHydration(of: item.id, present: RangeSet([Self.mib(0, 1)]), version: ETag(value: "v1"),
                                         holding: .partial, before: Self.made, after: Self.made)
            // The server's next version comes down as a new placeholder under the same row.
            let next = try Self.placeholder(provider, version: "v2")
            #expect(next.id == item.id)
            #expect(try database.hydratedRanges(of: item.id).ranges == RangeSet(), "the new placeholder inherited v1's ranges")
            #expect(try database.item(item.id)?.materialization == .dataless)

            // A fill of v1 that finishes late records nothing.
            try provider.recordHydration(of: item.id, present: RangeSet([Self.mib(0, 2)]), version: ETag(value: "v1"),
                                         holding: .partial, before: Self.made, after: Self.made)
            #expect(try database.hydratedRanges(of: item.id).ranges == RangeSet())
            #expect(try database.item(item.id)?.materialization == .dataless)
        }
    }

    @Test func theIdentifierOfADownloadIsTheOneItsRecordGets() throws {
        try withStateDatabase { database in
            let provider = SyncProvider(store: InMemoryRemoteStore(), state: database)
            let fresh = ItemIdentifier("fresh")
            #expect(try provider.identifierForDownload(at: Self.path, item: nil, fresh: fresh) == fresh)
            let item = try Self.placeholder(provider)
            #expect(try provider.identifierForDownload(at: Self.path, item: nil, fresh: fresh) == item.id)
            #expect(try provider.identifierForDownload(at: Self.path, item: item.id, fresh: fresh) == item.id)
        }
    }
}
