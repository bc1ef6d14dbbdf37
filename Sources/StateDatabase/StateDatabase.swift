// Durability contract: the state DB runs in WAL mode with `PRAGMA synchronous = FULL` on its
// one writer connection, so a transaction's WAL frames are fsync'ed before its commit
// returns. `apply` and `journal` each run in one write transaction (concurrent `apply` calls
// may share one: `GroupCommit`); when they return, what they wrote survives kill -9 and
// power loss, and when they throw, none of it happened. The
// replica records a hydrated range only after fsyncing the data it describes, so a range in
// this DB is never a hole on disk.

import Foundation
import GRDB
import SyncEngine
import SyncModel

/// The SQLite adapter of the engine's `StateStore` port: one file per domain, with the schema of
/// `StateSchema`.
///
/// Isolation: safe to use from any thread. Writes are serialised on one writer connection;
/// reads run on a pool of reader connections and see every write that returned before them.
/// Every error is a `ProviderError`: `localDiskFull` when the disk is full, otherwise mostly
/// `cannotSynchronize` with a message naming the file and what failed.
public final class StateDatabase: StateStore, Sendable {
    /// The DB file.
    public let path: String
    let database: any DatabaseWriter
    let isReadOnly: Bool

    /// How long a statement waits for another process's lock before failing.
    static let busyTimeout: TimeInterval = 5
    /// Where concurrent `apply` calls meet to share a transaction.
    let group = GroupCommit()

    /// `<stateDirectory>/<name>.sqlite`: where the state DB of the domain `name` lives.
    public static func path(forDomain name: String, stateDirectory: String) -> String {
        let directory = stateDirectory.hasSuffix("/") ? String(stateDirectory.dropLast()) : stateDirectory
        return "\(directory)/\(name).sqlite"
    }

    /// Opens the state DB at `path` for reading and writing, creating it (and its parent
    /// directory, mode 0700) if needed, and brings its schema up to date.
    ///
    /// Throws `cannotSynchronize` when the file cannot be opened, is not a state DB, or was
    /// migrated by a newer tidesync (this binary never writes a schema it does not know), and
    /// `localDiskFull` when there is no space to create or migrate it.
    public init(path: String) throws(ProviderError) {
        try Self.createParentDirectory(of: path)
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(Self.busyTimeout)
        configuration.label = "tidesync state DB"
        do {
            let pool = try DatabasePool(path: path, configuration: configuration)
            // GRDB sets synchronous = NORMAL when it switches a pool's file to WAL, after any
            // prepareDatabase hook, so FULL is set here, on the writer connection, afterwards.
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = FULL")
                try Self.refuseUnknownMigrations(db, path: path)
            }
            try StateSchema.migrator.migrate(pool)
            database = pool
        } catch {
            throw Self.providerError(error, path: path, action: "open the database")
        }
        self.path = path
        isReadOnly = false
    }

    /// Opens an existing state DB read-only, for `tidesync status` while the daemon is not
    /// running. Every write through it throws `cannotSynchronize`.
    ///
    /// Throws `cannotSynchronize` when the file does not exist, or its schema is newer or
    /// older than this binary's (a read-only open cannot migrate).
    public init(readOnlyPath path: String) throws(ProviderError) {
        guard FileManager.default.fileExists(atPath: path) else {
            throw ProviderError(.cannotSynchronize,
                                "there is no state DB at \(path); the daemon creates it when it first runs the domain")
        }
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(Self.busyTimeout)
        configuration.label = "tidesync state DB (read-only)"
        do {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            try queue.read { db in
                try Self.refuseUnknownMigrations(db, path: path)
                try Self.refuseMissingMigrations(db, path: path)
            }
            database = queue
        } catch {
            throw Self.providerError(error, path: path, action: "open the database read-only")
        }
        self.path = path
        isReadOnly = true
    }

    /// Closes the file. Every later call throws `cannotSynchronize`. Dropping the last
    /// reference closes it too.
    public func close() throws(ProviderError) {
        do { try database.close() } catch { throw providerError(error, action: "close the database") }
    }

    private static func createParentDirectory(of path: String) throws(ProviderError) {
        let directory = (path as NSString).deletingLastPathComponent
        guard !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) else { return }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch let error as CocoaError where error.code == .fileWriteOutOfSpace {
            throw ProviderError(.localDiskFull, "the disk holding the state directory \(directory) is full; free some space",
                                underlying: "\(error)")
        } catch {
            throw ProviderError(.cannotSynchronize, "cannot create the state directory \(directory)",
                                underlying: "\(error)")
        }
    }

    private static func refuseUnknownMigrations(_ db: Database, path: String) throws {
        let known = Set(StateSchema.migrator.migrations)
        let unknown = try StateSchema.migrator.appliedIdentifiers(db).subtracting(known).sorted()
        guard !unknown.isEmpty else { return }
        throw ProviderError(.cannotSynchronize,
                            "the state DB \(path) was written by a newer tidesync (migration \(unknown.joined(separator: ", "))); upgrade tidesync")
    }

    private static func refuseMissingMigrations(_ db: Database, path: String) throws {
        let applied = try StateSchema.migrator.appliedIdentifiers(db)
        if applied.isEmpty {
            throw ProviderError(.cannotSynchronize, "\(path) is not a tidesync state DB (it has no tidesync schema)")
        }
        let missing = StateSchema.migrator.migrations.filter { !applied.contains($0) }
        guard !missing.isEmpty else { return }
        throw ProviderError(.cannotSynchronize,
                            "the state DB \(path) was written by an older tidesync (it lacks migration \(missing.joined(separator: ", "))); run `tidesync run` once to upgrade it")
    }
}

// MARK: - Error mapping

/// A database error raised by one change of a batch, with what that change was doing.
struct FailedChange: Error {
    /// What failed, as a verb phrase: "record item 1234".
    let action: String
    let error: any Error
}

extension StateDatabase {
    /// `error` as the port's error: a `ProviderError` passes through, a full disk parks the
    /// domain (`localDiskFull`), anything else is `cannotSynchronize` naming the file and `action`
    /// (a verb phrase: "read item 1234").
    static func providerError(_ error: any Error, path: String, action: String) -> ProviderError {
        switch error {
        case let error as ProviderError:
            return error
        case let failure as FailedChange:
            return providerError(failure.error, path: path, action: failure.action)
        case let error as DatabaseError where error.resultCode == .SQLITE_FULL:
            return ProviderError(.localDiskFull, "the disk holding the state DB \(path) is full; free some space",
                                 underlying: "\(error)")
        default:
            return ProviderError(.cannotSynchronize, "state DB \(path): could not \(action)", underlying: "\(error)")
        }
    }

    func providerError(_ error: any Error, action: String) -> ProviderError {
        Self.providerError(error, path: path, action: action)
    }

    /// Runs `body` on a reader connection, mapping its errors.
    func read<T>(_ action: @autoclosure () -> String, _ body: (Database) throws -> T) throws(ProviderError) -> T {
        do { return try database.read(body) } catch { throw providerError(error, action: action()) }
    }

    /// Runs `body` in one write transaction, mapping its errors; a throw rolls it all back.
    func write<T>(_ action: @autoclosure () -> String, _ body: (Database) throws -> T) throws(ProviderError) -> T {
        guard !isReadOnly else {
            throw ProviderError(.cannotSynchronize,
                                "the state DB \(path) is open read-only; only the running daemon changes it")
        }
        do { return try database.write(body) } catch { throw providerError(error, action: action()) }
    }
}
