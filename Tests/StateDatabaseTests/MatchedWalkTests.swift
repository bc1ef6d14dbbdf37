import Foundation
@testable import StateDatabase
import SyncEngine
import SyncModel
import Testing

/// The rows' version and the last walk a pass found agreeing with the rows (migration v6):
/// what lets a pass in a new process skip comparing an unchanged remote with the rows.
@Suite struct MatchedWalkTests {
    /// Every write to a row a pass plans from changes the version — through `apply`, the
    /// journal, or SQL from another connection — and the sync anchor alone does not.
    @Test func everyWriteToTheRowsChangesTheVersionAndTheAnchorDoesNot() throws {
        try withStateDatabase { database in
            var last = try #require(database.itemsGeneration())
            func changed(_ what: Comment) throws {
                let now = try #require(database.itemsGeneration())
                #expect(now != last, what)
                last = now
            }
            let item = file("a.txt")
            try database.apply([.upsert(item)])
            try changed("an item inserted")
            var edited = item
            edited.size = 7
            try database.apply([.upsert(edited)])
            try changed("an item updated")
            try database.apply([.setHydratedRanges(item.id, RangeSet([ByteRange(offset: 0, length: 4)]), version: nil)])
            try changed("hydrated ranges set")
            let journaled = try database.journal(operation("upload", for: item.id))
            try changed("an operation journaled")
            try database.apply([.completeOperation(journaled)])
            try changed("an operation completed")
            try database.apply([.setSyncAnchor(SyncAnchor("anchor-2"))])
            #expect(database.itemsGeneration() == last, "the anchor alone is not a row")
            try StateDatabase.executeScript("DELETE FROM item WHERE id = '\(item.id.rawValue)'", onFileAt: database.path)
            try changed("a row deleted through another connection")
            // Every table a pass plans from has its three triggers (a migration that rebuilds
            // one of them must make them again).
            #expect(try database.count("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%_bumps_rows_version'") == 18)
        }
    }

    /// The walk is kept across a close and reopen (a new process), replaced by a newer one,
    /// and a walk equal to the kept one writes nothing.
    @Test func theLastAgreeingWalkOutlivesTheProcess() throws {
        try withScratchDirectory { directory in
            let path = directory + "/home.sqlite"
            let first = try StateDatabase(path: path)
            #expect(try first.matchedWalk() == nil)
            let walk = StoredMatchedWalk(digest: String(repeating: "ab", count: 32), generation: 3)
            try first.recordMatchedWalk(walk)
            let written = try walState(path)
            try first.recordMatchedWalk(walk)
            #expect(try walState(path) == written, "the same walk again writes nothing")
            try first.close()

            let second = try StateDatabase(path: path)
            defer { try? second.close() }
            #expect(try second.matchedWalk() == walk)
            let newer = StoredMatchedWalk(digest: String(repeating: "cd", count: 32), generation: 9)
            try second.recordMatchedWalk(newer)
            #expect(try second.matchedWalk() == newer)
            #expect(try second.count("SELECT count(*) FROM matched_walk") == 1)
        }
    }

    /// The WAL file's size and mtime: a commit appends to it.
    func walState(_ path: String) throws -> String {
        var st = stat()
        guard lstat(path + "-wal", &st) == 0 else { throw POSIXError(.ENOENT) }
        return "\(st.st_size) \(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)"
    }
}
