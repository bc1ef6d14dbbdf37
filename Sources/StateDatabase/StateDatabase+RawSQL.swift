import Foundation
import GRDB

// Raw SQL access for StateDatabaseTests (through `@testable import`), which inspect
// connection settings and build fixture files of older schemas without depending on GRDB
// themselves. Production code goes through the `StateStore` API.
extension StateDatabase {
    /// Runs `sql` on the writer connection, outside any transaction, and returns the first
    /// column of the first row as text (nil when there is none), e.g. `PRAGMA synchronous`.
    func executeOnWriter(_ sql: String) throws -> String? {
        try database.writeWithoutTransaction { db in try String.fetchOne(db, sql: sql) }
    }

    /// Runs the statements of `sql` on the file at `path`, creating it if needed, in one
    /// transaction, with foreign keys on.
    static func executeScript(_ sql: String, onFileAt path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try queue.write { db in try db.execute(sql: sql) }
        try queue.close()
    }

    /// The rows `sql` selects from the file at `path`, each column as text (nil for NULL).
    /// It waits for a running daemon's write like the daemon's own connections do: without
    /// the busy timeout, opening it during a commit failed at once with "database is locked"
    /// (FilesOnDemandTests on CI).
    static func query(_ sql: String, onFileAt path: String) throws -> [[String?]] {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(busyTimeout)
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            try Row.fetchAll(db, sql: sql).map { row in row.databaseValues.map(text(of:)) }
        }
    }

    /// A value as text: integers and reals in decimal, blobs in hex.
    private static func text(of value: DatabaseValue) -> String? {
        switch value.storage {
        case .null: nil
        case .int64(let integer): String(integer)
        case .double(let real): String(real)
        case .string(let string): string
        case .blob(let data): data.map { String(format: "%02x", $0) }.joined()
        }
    }
}
