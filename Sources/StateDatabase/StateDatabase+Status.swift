// Reads for `tidesync status` and `tidesync conflicts`, and the two writes only they need:
// the conflict list (a `StateChange`, so it can share a transaction) and the time of the last
// complete sync. Same durability as every other write (see StateDatabase.swift).

import Foundation
import GRDB
import SyncEngine
import SyncModel

/// What a domain's state DB holds, counted: the part of `tidesync status` that does not need
/// the daemon.
public struct DomainSummary: Sendable, Equatable {
    public var files = 0
    public var folders = 0
    public var symlinks = 0
    public var bundles = 0
    /// The content bytes of every file and bundle, as last synced.
    public var bytesTotal: Int64 = 0
    /// The part of `bytesTotal` that is on this disk (all of it, until placeholders exist).
    public var bytesOnDisk: Int64 = 0
    /// Placeholders holding none of their bytes, and some of them.
    public var dataless = 0
    public var partial = 0
    /// How many conflict copies were ever recorded.
    public var conflicts = 0
    /// When both sides were last found to agree; nil before the first time.
    public var lastCompleteSync: Date?

    public init() {}
}

extension StateDatabase {
    /// The `domain_state` key of the last complete sync (seconds since 1970, as text).
    static let lastCompleteSyncKey = "last_complete_sync"

    /// Counts the items by kind, their bytes, and the conflicts; one read transaction.
    public func summary() throws(ProviderError) -> DomainSummary {
        try read("count the items") { db in
            var summary = DomainSummary()
            let rows = try Row.fetchAll(db, sql: """
                SELECT kind, count(*), total(size),
                       total(CASE WHEN materialization = 'materialized' THEN size ELSE 0 END),
                       total(materialization = 'dataless'), total(materialization = 'partial')
                FROM item WHERE id != 'root' GROUP BY kind
                """)
            for row in rows {
                let count: Int = row[1]
                switch row[0] as String {
                case "file": summary.files = count
                case "folder": summary.folders = count
                case "symlink": summary.symlinks = count
                default: summary.bundles = count
                }
                summary.bytesTotal += Int64(row[2] as Double)
                summary.bytesOnDisk += Int64(row[3] as Double)
                summary.dataless += Int(row[4] as Double)
                summary.partial += Int(row[5] as Double)
            }
            summary.bytesOnDisk += try Int64.fetchOne(db, sql: """
                SELECT total(end_offset - start_offset) FROM hydrated_range
                JOIN item ON item.id = hydrated_range.item_id WHERE item.materialization = 'partial'
                """).map { $0 } ?? 0
            summary.conflicts = try Int.fetchOne(db, sql: "SELECT count(*) FROM conflict") ?? 0
            summary.lastCompleteSync = try String.fetchOne(
                db, sql: "SELECT value FROM domain_state WHERE key = ?", arguments: [Self.lastCompleteSyncKey]
            ).flatMap(Double.init).map(Date.init(timeIntervalSince1970:))
            return summary
        }
    }

    /// Records that both sides agreed at `date`. Durable when it returns.
    public func recordCompleteSync(at date: Date) throws(ProviderError) {
        try write("record the time of the last complete sync") { db in
            try db.execute(sql: """
                INSERT INTO domain_state (key, value) VALUES (?, ?)
                ON CONFLICT (key) DO UPDATE SET value = excluded.value
                """, arguments: [Self.lastCompleteSyncKey, String(date.timeIntervalSince1970)])
        }
    }

    /// The `limit` most recently recorded conflicts, newest first.
    public func conflicts(limit: Int = Int.max) throws(ProviderError) -> [ConflictRecord] {
        try read("list the conflicts") { db in
            try Row.fetchAll(db, sql: """
                SELECT original_path, copy_path, kind, detected_at, base_etag, remote_etag, local_size, local_mtime_ns
                FROM conflict ORDER BY id DESC LIMIT ?
                """, arguments: [min(limit, Int(Int64.max))]).map(Self.conflict(from:))
        }
    }

    private static func conflict(from row: Row) throws -> ConflictRecord {
        func path(_ index: Int) throws -> RemotePath {
            let text: String = try row.decode(atIndex: index)
            do { return try RemotePath(string: text) } catch {
                throw UndecodableRow(description: "conflict path \"\(text)\": \(error.message)")
            }
        }
        let kindText: String = try row.decode(atIndex: 2)
        guard let kind = ItemKind(rawValue: kindText) else {
            throw UndecodableRow(description: "conflict kind \"\(kindText)\"")
        }
        return ConflictRecord(
            original: try path(0), copy: try path(1), kind: kind,
            detectedAt: Date(timeIntervalSince1970: try row.decode(atIndex: 3)),
            baseVersion: try row.decode(String?.self, atIndex: 4).map { ETag(value: $0) },
            remoteVersion: try row.decode(String?.self, atIndex: 5).map { ETag(value: $0) },
            local: LocalStat(inode: 0, size: try row.decode(atIndex: 6), modificationTimeNanoseconds: try row.decode(atIndex: 7)))
    }

    static func recordConflict(_ conflict: ConflictRecord, in db: Database) throws {
        try db.cachedStatement(sql: """
            INSERT INTO conflict (original_path, copy_path, kind, detected_at, base_etag, remote_etag,
                                  local_size, local_mtime_ns)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [
                conflict.original.description, conflict.copy.description, conflict.kind.rawValue,
                conflict.detectedAt.timeIntervalSince1970, conflict.baseVersion?.value, conflict.remoteVersion?.value,
                conflict.local.size, conflict.local.modificationTimeNanoseconds,
            ])
    }
}
