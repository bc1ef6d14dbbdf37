import Foundation
@testable import StateDatabase
import SyncEngine
import SyncModel
import Testing
import TestSupport

/// The file itself: how it is opened, its durability settings, reopening, read-only use.
@Suite struct StateDatabaseFileTests {
    @Test func pathOfADomainIsNameDotSqliteInTheStateDirectory() {
        #expect(StateDatabase.path(forDomain: "home", stateDirectory: "/var/state/tidesync") == "/var/state/tidesync/home.sqlite")
        #expect(StateDatabase.path(forDomain: "home", stateDirectory: "/var/state/tidesync/") == "/var/state/tidesync/home.sqlite")
    }

    @Test func aFreshDatabaseIsDurableWALWithTheRootAndNothingElse() throws {
        try withScratchDirectory { directory in
            let database = try StateDatabase(path: directory + "/nested/home.sqlite")
            defer { try? database.close() }

            let mode = try FileManager.default.attributesOfItem(atPath: directory + "/nested")[.posixPermissions] as? Int
            #expect(mode == 0o700)
            #expect(try database.executeOnWriter("PRAGMA journal_mode") == "wal")
            #expect(try database.executeOnWriter("PRAGMA synchronous") == "2")  // FULL
            #expect(try database.executeOnWriter("PRAGMA foreign_keys") == "1")
            #expect(try database.column("PRAGMA journal_mode") == ["wal"])  // persisted in the file

            let root = try #require(try database.item(.root))
            #expect(root == ItemRecord(id: .root, parentID: nil, name: "", kind: .folder))
            #expect(try database.allItems() == [root])
            #expect(try database.children(of: .root).isEmpty)
            #expect(try database.syncAnchor() == nil)
            #expect(try database.pendingOperations().isEmpty)
        }
    }

    @Test func dataSurvivesClosingAndReopening() throws {
        try withScratchDirectory { directory in
            let path = directory + "/home.sqlite"
            let item = file("kept.txt")
            let first = try StateDatabase(path: path)
            try first.apply([.upsert(item), .setSyncAnchor(SyncAnchor("anchor-7")),
                             .setHydratedRanges(item.id, RangeSet([ByteRange(offset: 0, length: 10)]), version: ETag(value: "e1"))])
            let journaled = try first.journal(operation("upload", for: item.id))
            try first.close()

            let second = try StateDatabase(path: path)
            defer { try? second.close() }
            #expect(try second.item(item.id) == item)
            #expect(try second.syncAnchor() == SyncAnchor("anchor-7"))
            #expect(try second.hydratedRanges(of: item.id).ranges == RangeSet([ByteRange(offset: 0, length: 10)]))
            #expect(try second.pendingOperations().map(\.id) == [journaled])
            #expect(try second.executeOnWriter("PRAGMA synchronous") == "2")
        }
    }

    @Test func heldDeletionsSurviveTheDaemonAndClearWhenNothingIsHeld() throws {
        try withScratchDirectory { directory in
            let path = directory + "/home.sqlite"
            let held = DeletionHold.Summary(reason: .sideEmptied, side: .local, items: 20)
            let first = try StateDatabase(path: path)
            #expect(try first.heldDeletions() == nil)
            try first.recordHeldDeletions(held)
            try first.close()
            let reader = try StateDatabase(readOnlyPath: path)
            #expect(try reader.heldDeletions() == held)
            try reader.close()
            let second = try StateDatabase(path: path)
            defer { try? second.close() }
            try second.recordHeldDeletions(nil)
            #expect(try second.heldDeletions() == nil)
        }
    }

    @Test func aReadOnlyOpenReadsAClosedDatabaseAndRefusesWrites() throws {
        try withScratchDirectory { directory in
            let path = directory + "/home.sqlite"
            let item = file("seen.txt")
            let writer = try StateDatabase(path: path)
            try writer.apply([.upsert(item)])
            try writer.close()

            let reader = try StateDatabase(readOnlyPath: path)
            defer { try? reader.close() }
            #expect(try reader.item(item.id) == item)
            #expect(try reader.allItems().count == 2)
            let error = #expect(throws: ProviderError.self) { try reader.apply([.remove(item.id)]) }
            #expect(error?.code == .cannotSynchronize)
            #expect(error?.message.contains("read-only") == true)
            #expect(throws: ProviderError.self) { _ = try reader.journal(operation("upload")) }
            #expect(try reader.item(item.id) == item)
        }
    }

    @Test func aReadOnlyOpenOfAMissingFileSaysThereIsNoStateDB() throws {
        try withScratchDirectory { directory in
            let error = #expect(throws: ProviderError.self) {
                _ = try StateDatabase(readOnlyPath: directory + "/absent.sqlite")
            }
            #expect(error?.code == .cannotSynchronize)
            #expect(error?.message.contains("no state DB at \(directory)/absent.sqlite") == true)
            #expect(!FileManager.default.fileExists(atPath: directory + "/absent.sqlite"))
        }
    }

    @Test func aFullDiskIsLocalDiskFullAndRollsBackTheBatch() throws {
        try withStateDatabase { database in
            // Capping the file at its current size makes SQLite answer SQLITE_FULL, as ENOSPC would.
            let pages = try #require(try database.executeOnWriter("PRAGMA page_count"))
            _ = try database.executeOnWriter("PRAGMA max_page_count = \(pages)")
            let batch = (0..<500).map { StateChange.upsert(file(String(repeating: "n", count: 200) + "\($0)")) }

            let error = #expect(throws: ProviderError.self) { try database.apply(batch) }
            #expect(error?.code == .localDiskFull)
            #expect(error?.disposition == .parkDomain)
            #expect(error?.message == "the disk holding the state DB \(database.path) is full; free some space")
            #expect(try database.allItems().count == 1)
        }
    }

    @Test func aClosedDatabaseThrowsCannotSynchronize() throws {
        try withStateDatabase { database in
            try database.close()
            let error = #expect(throws: ProviderError.self) { _ = try database.item(.root) }
            #expect(error?.code == .cannotSynchronize)
            #expect(error?.message.contains(database.path) == true)
        }
    }

    /// FilesOnDemandTests read the running daemon's DB this way and once failed at once
    /// with "database is locked": the inspecting connection had no busy timeout.
    @Test("a read-only inspection waits for another process's lock instead of failing at once")
    func inspectionWaitsForALock() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tidesync-lock-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/home.sqlite"
        try StateDatabase(path: path).close()
        // Another process holds the file exclusively for a second.
        let holder = try ChildProcess("/usr/bin/python3", ["-c", """
            import sqlite3, sys, time
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute("PRAGMA locking_mode=EXCLUSIVE"); c.execute("BEGIN EXCLUSIVE")
            open(sys.argv[2], "w").close()
            time.sleep(1); c.execute("COMMIT"); c.close()
            """, path, directory + "/locked"])
        defer { holder.waitUntilExit() }
        try await eventually("the lock", timeout: .seconds(60)) { FileManager.default.fileExists(atPath: directory + "/locked") }
        #expect(try StateDatabase.query("SELECT count(*) FROM item", onFileAt: path) == [["1"]])
    }

}
