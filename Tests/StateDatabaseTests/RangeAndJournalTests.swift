import Foundation
@testable import StateDatabase
import SyncEngine
import SyncModel
import Testing

/// Hydrated ranges, the sync anchor and the journal.
@Suite struct RangeAndJournalTests {
    @Test func hydratedRangesAndTheirVersionRoundTripAndSurviveAnUpsert() throws {
        try withStateDatabase { database in
            var item = file("movie.mkv")
            item.size = 1 << 40
            item.materialization = .partial
            let ranges = RangeSet([ByteRange(offset: 0, length: 1 << 20), ByteRange(offset: 1 << 39, length: 4096),
                                   ByteRange(offset: (1 << 40) - 10, length: 10)])
            let version = ETag(value: "v1", isWeak: true)
            try database.apply([.upsert(item), .setHydratedRanges(item.id, ranges, version: version)])

            #expect(try database.hydratedRanges(of: item.id).ranges == ranges)
            #expect(try database.hydratedRanges(of: item.id).version == version)
            #expect(try database.hydratedRanges(of: item.id).version?.isWeak == true)

            item.name = "renamed.mkv"
            item.local = LocalStat(inode: 5, size: 1 << 40, modificationTimeNanoseconds: 0)
            try database.apply([.upsert(item)])
            #expect(try database.hydratedRanges(of: item.id).ranges == ranges)
            #expect(try database.hydratedRanges(of: item.id).version == version)

            let fewer = RangeSet([ByteRange(offset: 100, length: 1)])
            try database.apply([.setHydratedRanges(item.id, fewer, version: ETag(value: "v2"))])
            #expect(try database.hydratedRanges(of: item.id).ranges == fewer)
            #expect(try database.hydratedRanges(of: item.id).version == ETag(value: "v2"))

            try database.apply([.setHydratedRanges(item.id, RangeSet(), version: nil)])
            #expect(try database.hydratedRanges(of: item.id).ranges == RangeSet())
            #expect(try database.hydratedRanges(of: item.id).version == nil)
        }
    }

    @Test func rangesOfAnUnknownItemAreNoSuchItem() throws {
        try withStateDatabase { database throws in
            let ghost = ItemIdentifier("ghost")
            #expect(try database.hydratedRanges(of: ghost).ranges == RangeSet())
            let error = #expect(throws: ProviderError.self) {
                try database.apply([.setHydratedRanges(ghost, RangeSet([ByteRange(offset: 0, length: 1)]), version: nil)])
            }
            #expect(error?.code == .noSuchItem)
        }
    }

    @Test func theSyncAnchorIsSetReplacedAndCleared() throws {
        try withStateDatabase { database in
            try database.apply([.setSyncAnchor(SyncAnchor("first"))])
            try database.apply([.setSyncAnchor(SyncAnchor("second"))])
            #expect(try database.syncAnchor() == SyncAnchor("second"))
            try database.apply([.setSyncAnchor(nil)])
            #expect(try database.syncAnchor() == nil)
        }
    }

    @Test func journalIdsIncreaseAndEntriesRoundTrip() throws {
        try withStateDatabase { database in
            let item = ItemIdentifier("item-1")
            let first = try database.journal(operation("upload", for: item))
            let second = try database.journal(PendingOperation(
                id: 999, itemID: nil, kind: "move", payload: Data([0, 1, 2, 255]),
                createdAt: Date(timeIntervalSince1970: 1_790_000_001.5), attempts: 2,
                notBefore: Date(timeIntervalSince1970: 1_790_000_060), lastError: "HTTP 503"))
            try database.apply([.completeOperation(second)])
            let third = try database.journal(operation("download"))
            #expect(first < second && second < third)

            let entries = try database.pendingOperations()
            #expect(entries.map(\.id) == [first, third])
            #expect(entries[0] == PendingOperation(id: first, itemID: item, kind: "upload",
                                                   payload: operation("upload").payload,
                                                   createdAt: Date(timeIntervalSince1970: 1_790_000_000.25)))
            try database.apply([.completeOperation(first), .completeOperation(first)])  // a replay repeats it
            #expect(try database.pendingOperations().map(\.id) == [third])
        }
    }

    @Test func journalEntriesKeepEveryField() throws {
        try withStateDatabase { database in
            let entry = PendingOperation(itemID: nil, kind: "move", payload: Data([0, 1, 2, 255]),
                                         createdAt: Date(timeIntervalSince1970: 1_790_000_001.5), attempts: 2,
                                         notBefore: Date(timeIntervalSince1970: 1_790_000_060), lastError: "HTTP 503")
            let id = try database.journal(entry)
            var expected = entry
            expected.id = id
            #expect(try database.pendingOperations() == [expected])
        }
    }

    @Test func completingAnOperationAndRecordingItsResultAreAtomic() throws {
        try withStateDatabase { database in
            let taken = file("taken")
            let uploaded = file("uploaded")
            try database.apply([.upsert(taken), .upsert(uploaded)])
            let upload = try database.journal(operation("upload", for: uploaded.id))

            var result = uploaded
            result.remoteETag = ETag(value: "new")
            result.name = taken.name  // makes the second change fail
            let error = #expect(throws: ProviderError.self) {
                try database.apply([.completeOperation(upload), .upsert(result)])
            }
            #expect(error?.code == .filenameCollision)
            #expect(try database.pendingOperations().map(\.id) == [upload])
            #expect(try database.item(uploaded.id) == uploaded)

            result.name = "uploaded"
            try database.apply([.completeOperation(upload), .upsert(result)])
            #expect(try database.pendingOperations().isEmpty)
            #expect(try database.item(uploaded.id) == result)
        }
    }

    @Test func failOperationCountsAttemptsAndSetsBackoffAndError() throws {
        try withStateDatabase { database in
            let id = try database.journal(operation("upload", for: ItemIdentifier("x")))
            let later = Date(timeIntervalSince1970: 1_790_000_300)
            try database.apply([.failOperation(id, error: "server unreachable", notBefore: later)])
            try database.apply([.failOperation(id, error: "HTTP 507: quota", notBefore: nil)])
            try database.apply([.failOperation(id + 100, error: "not journaled", notBefore: nil)])

            let entry = try #require(try database.pendingOperations().first)
            #expect(entry.attempts == 2)
            #expect(entry.notBefore == nil)
            #expect(entry.lastError == "HTTP 507: quota")
            try database.apply([.failOperation(id, error: "again", notBefore: later)])
            #expect(try database.pendingOperations().first?.notBefore == later)
            #expect(try database.pendingOperations().first?.attempts == 3)
        }
    }
}
