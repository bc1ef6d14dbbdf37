import Foundation
@testable import StateDatabase
import SyncEngine
import SyncModel
import Testing

/// The conflict list (migration v2) and the counts `tidesync status` reads.
@Suite struct ConflictListTests {
    func conflict(_ name: String, at seconds: Double, base: String? = "b1") throws -> ConflictRecord {
        ConflictRecord(original: try RemotePath(string: "docs/\(name).txt"),
                       copy: try RemotePath(string: "docs/\(name) (conflicted copy 2026-11-22 134501 laptop).txt"),
                       kind: .file, detectedAt: Date(timeIntervalSince1970: seconds), baseVersion: base.map { ETag(value: $0) },
                       remoteVersion: ETag(value: "r2"),
                       local: LocalStat(inode: 0, size: 12, modificationTimeNanoseconds: 1_790_000_000_500_000_000))
    }

    @Test func recordedConflictsListNewestFirstWithEveryField() throws {
        try withStateDatabase { database in
            let first = try conflict("a", at: 1_790_000_000)
            let second = try conflict("b", at: 1_790_000_100, base: nil)
            try database.apply([.recordConflict(first)])
            try database.apply([.recordConflict(second)])
            #expect(try database.conflicts() == [second, first])
            #expect(try database.conflicts(limit: 1) == [second])
            #expect(try database.summary().conflicts == 2)
        }
    }

    @Test func theSummaryCountsItemsByKindAndTheLastCompleteSync() throws {
        try withStateDatabase { database in
            let docs = folder("Docs")
            var report = file("r.pdf", in: docs.id)
            report.size = 1000
            try database.apply([.upsert(docs), .upsert(report)])
            #expect(try database.summary().lastCompleteSync == nil)
            try database.recordCompleteSync(at: Date(timeIntervalSince1970: 1_790_000_000.25))
            let summary = try database.summary()
            #expect(summary.files == 1)
            #expect(summary.folders == 1)
            #expect(summary.bytesTotal == 1000)
            #expect(summary.bytesOnDisk == 1000)
            #expect(summary.lastCompleteSync == Date(timeIntervalSince1970: 1_790_000_000.25))
        }
    }

    @Test func aReadOnlyOpenSeesTheDaemonsConflicts() throws {
        try withScratchDirectory { directory in
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let path = directory + "/d.sqlite"
            let writer = try StateDatabase(path: path)
            defer { try? writer.close() }
            try writer.apply([.recordConflict(try conflict("a", at: 1_790_000_000))])
            let reader = try StateDatabase(readOnlyPath: path)
            defer { try? reader.close() }
            #expect(try reader.conflicts().map(\.original.description) == ["docs/a.txt"])
        }
    }
}
