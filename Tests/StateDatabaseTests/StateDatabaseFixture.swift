import Foundation
@testable import StateDatabase
import SyncEngine
import SyncModel

/// Runs `body` with a fresh scratch directory (which does not exist until something makes it
/// below its parent), then removes it.
func withScratchDirectory<T>(_ body: (_ directory: String) throws -> T) throws -> T {
    let parent = FileManager.default.temporaryDirectory
        .appendingPathComponent("tidesync-statedb-\(UUID().uuidString.prefix(8))").path
    try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: parent) }
    return try body(parent + "/state")
}

/// Runs `body` with a state DB opened on a fresh file, then closes and removes it.
func withStateDatabase<T>(_ body: (_ database: StateDatabase) throws -> T) throws -> T {
    try withScratchDirectory { directory in
        let database = try StateDatabase(path: StateDatabase.path(forDomain: "test", stateDirectory: directory))
        defer { try? database.close() }
        return try body(database)
    }
}

/// A file item below `parent` with only the required fields.
func file(_ name: String, in parent: ItemIdentifier = .root, id: String = UUID().uuidString) -> ItemRecord {
    ItemRecord(id: ItemIdentifier(id), parentID: parent, name: name, kind: .file)
}

/// A folder item below `parent`.
func folder(_ name: String, in parent: ItemIdentifier = .root, id: String = UUID().uuidString) -> ItemRecord {
    ItemRecord(id: ItemIdentifier(id), parentID: parent, name: name, kind: .folder)
}

/// A journal entry of `kind` for `item`.
func operation(_ kind: String, for item: ItemIdentifier? = nil) -> PendingOperation {
    PendingOperation(itemID: item, kind: kind, payload: Data("{\"kind\":\"\(kind)\"}".utf8),
                     createdAt: Date(timeIntervalSince1970: 1_790_000_000.25))
}

extension StateDatabase {
    /// The first column of the rows `sql` selects from this DB's file, through a separate
    /// read-only connection.
    func column(_ sql: String) throws -> [String?] {
        try Self.query(sql, onFileAt: path).map { $0.first ?? nil }
    }

    /// The number of rows `sql` (a `SELECT count(*) …`) counts.
    func count(_ sql: String) throws -> Int {
        Int(try column(sql).first.flatMap { $0 } ?? "") ?? -1
    }
}
