import Foundation
import GRDB
import SyncEngine
import SyncModel

// The write half of `StateStore`. Each call is one write transaction, durable when it returns
// (see the contract at the top of StateDatabase.swift).
extension StateDatabase {
    /// Writes `operation` to the journal (its `id` is ignored) and returns the id assigned,
    /// greater than every id assigned before. Durable when it returns.
    public func journal(_ operation: PendingOperation) throws(ProviderError) -> Int64 {
        try write("journal a \(operation.kind) operation") { db in
            try db.cachedStatement(sql: """
                INSERT INTO pending_operation (item_id, kind, payload, created_at, attempts, not_before, last_error)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: operation.databaseArguments)
            return db.lastInsertedRowID
        }
    }

    /// Writes every operation to the journal in one transaction and returns their ids, in
    /// order. Durable when it returns; none is written when it throws.
    public func journal(_ operations: [PendingOperation]) throws(ProviderError) -> [Int64] {
        guard !operations.isEmpty else { return [] }
        return try write("journal \(operations.count) operations") { db in
            let statement = try db.cachedStatement(sql: """
                INSERT INTO pending_operation (item_id, kind, payload, created_at, attempts, not_before, last_error)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """)
            return try operations.map { operation in
                try statement.execute(arguments: operation.databaseArguments)
                return db.lastInsertedRowID
            }
        }
    }

    /// Applies `changes` in order, in one transaction: all of them, durably, or none.
    ///
    /// - `upsert` inserts the item or updates every field of its row, keeping its hydrated
    ///   ranges and bundle members. A name already used in the parent by another item throws
    ///   `filenameCollision`; a parent not in the DB throws `parentMissing`; a move into the
    ///   item's own subtree throws `cannotSynchronize`.
    /// - `remove` removes the item and its subtree with their ranges and bundle members; it is
    ///   a no-op for an unknown item and throws `cannotSynchronize` for the root. Journal
    ///   entries of removed items stay: an operation may outlive its item's row.
    /// - `setHydratedRanges` throws `noSuchItem` for an unknown item.
    /// - `completeOperation` and `failOperation` are no-ops for an id not in the journal, so a
    ///   replay after a crash may repeat them.
    public func apply(_ changes: [StateChange]) throws(ProviderError) {
        guard !changes.isEmpty else { return }
        try group.apply(changes) { members in commit(members) }
    }

    /// Applies each member's changes, all in one transaction; when it fails, each member in
    /// one of its own (see `GroupCommit`). Returns each member's outcome, in order.
    func commit(_ members: [[StateChange]]) -> [Result<Void, ProviderError>] {
        if members.count > 1 {
            let count = members.reduce(0) { $0 + $1.count }
            do throws(ProviderError) {
                try write("apply \(count) changes of \(members.count) calls") { db in
                    for changes in members { try Self.apply(changes, in: db) }
                }
                return members.map { _ in .success(()) }
            } catch {
                // Nothing of it stays: each member on its own below.
            }
        }
        return members.map { changes in
            Result { () throws(ProviderError) in
                try write("apply \(changes.count) changes") { db in try Self.apply(changes, in: db) }
            }
        }
    }

    private static func apply(_ changes: [StateChange], in db: Database) throws {
        for change in changes {
            do {
                try Self.apply(change, in: db)
            } catch let error as DatabaseError {
                throw FailedChange(action: Self.summary(of: change), error: error)
            }
        }
    }

    private static func apply(_ change: StateChange, in db: Database) throws {
        switch change {
        case .upsert(let item):
            try upsert(item, in: db)
        case .remove(let id):
            try removeSubtree(of: id, in: db)
        case .setHydratedRanges(let id, let ranges, let version):
            try setHydratedRanges(of: id, to: ranges, version: version, in: db)
        case .setLocalBirth(let id, let stat):
            try db.cachedStatement(sql: """
                UPDATE item SET local_birth_ns = ?
                WHERE id = ? AND local_birth_ns = 0 AND local_inode = ? AND local_size = ? AND local_mtime_ns = ?
                """).execute(arguments: [stat.birthNanoseconds, id.rawValue, Int64(bitPattern: stat.inode), stat.size,
                                         stat.modificationTimeNanoseconds])
        case .setSyncAnchor(let anchor):
            try setSyncAnchor(anchor, in: db)
        case .completeOperation(let id):
            try db.cachedStatement(sql: "DELETE FROM pending_operation WHERE id = ?").execute(arguments: [id])
        case .failOperation(let id, let error, let notBefore):
            try db.cachedStatement(sql: """
                UPDATE pending_operation SET attempts = attempts + 1, not_before = ?, last_error = ? WHERE id = ?
                """).execute(arguments: [notBefore?.timeIntervalSince1970, error, id])
        case .recordConflict(let conflict):
            try recordConflict(conflict, in: db)
        case .setBundleMembers(let id, let members):
            try setBundleMembers(of: id, to: members, in: db)
        case .setRemoteIdentity(let identity):
            try db.cachedStatement(sql: """
                INSERT INTO remote_identity (id, location, root_file_id, recorded_at) VALUES (1, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET location = excluded.location, root_file_id = excluded.root_file_id,
                                               recorded_at = excluded.recorded_at
                """).execute(arguments: [identity.location, identity.rootFileID, Date().timeIntervalSince1970])
        }
    }

    private static func setBundleMembers(of id: ItemIdentifier, to members: [BundleMember], in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM bundle_member WHERE bundle_id = ?").execute(arguments: [id.rawValue])
        let insert = try db.cachedStatement(sql: """
            INSERT INTO bundle_member (bundle_id, relative_path, kind, size, content_hash, remote_etag, remote_etag_weak,
                                       symlink_target, local_inode, local_mtime_ns)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for member in members {
            try insert.execute(arguments: [
                id.rawValue, member.relativePath, member.kind.rawValue, member.size, member.contentHash,
                member.remoteETag?.value, member.remoteETag?.isWeak ?? false, member.symlinkTarget,
                member.local.map { Int64(bitPattern: $0.inode) }, member.local?.modificationTimeNanoseconds,
            ])
        }
    }

    /// What `change` does, as a verb phrase for error messages.
    private static func summary(of change: StateChange) -> String {
        switch change {
        case .upsert(let item): "record item \(item.id)"
        case .remove(let id): "remove item \(id) and its subtree"
        case .setHydratedRanges(let id, _, _): "record the hydrated ranges of item \(id)"
        case .setLocalBirth(let id, _): "record the birth time of item \(id)"
        case .setSyncAnchor: "record the sync anchor"
        case .completeOperation(let id): "complete journal entry \(id)"
        case .failOperation(let id, _, _): "record a failure of journal entry \(id)"
        case .recordConflict(let conflict): "record the conflict copy \(conflict.copy)"
        case .setBundleMembers(let id, let members): "record the \(members.count) members of bundle \(id)"
        case .setRemoteIdentity(let identity): "record the remote \(identity)"
        }
    }

    // MARK: - Items

    private static let upsertSQL = """
        INSERT INTO item (\(ItemColumn.insertList)) VALUES (\(ItemColumn.placeholders))
        ON CONFLICT (id) DO UPDATE SET \(ItemColumn.updateFromExcluded)
        """

    // Not INSERT OR REPLACE: that deletes the old row first, and the delete would cascade to
    // the item's hydrated ranges and bundle members.
    private static func upsert(_ item: ItemRecord, in db: Database) throws {
        if let parent = item.parentID {
            try refuseCycle(moving: item.id, into: parent, in: db)
        }
        do {
            try db.cachedStatement(sql: upsertSQL).execute(arguments: item.databaseArguments)
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            // The primary key is handled by ON CONFLICT, so this is UNIQUE (parent_id, name).
            let holder = (try? child(of: item.parentID ?? .root, named: item.name, in: db))??.id
            throw ProviderError(.filenameCollision,
                                "cannot record item \(item.id) as \"\(item.name)\" in folder \(item.parentID ?? .root): "
                                    + "item \(holder.map(String.init(describing:)) ?? "?") already has that name",
                                underlying: "\(error)")
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_FOREIGNKEY {
            throw ProviderError(.parentMissing,
                                "cannot record item \(item.id): its parent \(item.parentID ?? .root) is not in the state DB",
                                underlying: "\(error)")
        }
    }

    /// Throws when putting `id` under `parent` would make a loop, which would cut the loop
    /// off from the root. Only a move of an existing item, or an item that is its own
    /// parent, can do that, so new items cost one primary-key lookup.
    private static func refuseCycle(moving id: ItemIdentifier, into parent: ItemIdentifier, in db: Database) throws {
        let loops: Bool
        if parent == id {
            loops = true
        } else {
            let current = try Row.fetchOne(db.cachedStatement(sql: "SELECT parent_id FROM item WHERE id = ?"),
                                           arguments: [id.rawValue])
            guard let current, try current.decode(String?.self, atIndex: 0) != parent.rawValue else { return }
            // UNION, not UNION ALL: stops even on a loop already in the file.
            loops = try Bool.fetchOne(db.cachedStatement(sql: """
                WITH RECURSIVE ancestor (id) AS (
                    SELECT ?
                    UNION
                    SELECT item.parent_id FROM item JOIN ancestor ON item.id = ancestor.id
                    WHERE item.parent_id IS NOT NULL
                )
                SELECT EXISTS (SELECT 1 FROM ancestor WHERE id = ?)
                """), arguments: [parent.rawValue, id.rawValue]) ?? false
        }
        if loops {
            throw ProviderError(.cannotSynchronize, "cannot move item \(id) into \(parent): \(parent) is inside \(id)")
        }
    }

    private static func removeSubtree(of id: ItemIdentifier, in db: Database) throws {
        guard id != .root else {
            throw ProviderError(.cannotSynchronize,
                                "cannot remove the root item from the state DB; remove the domain instead")
        }
        // One statement, so the parent_id foreign key is checked once the whole subtree is gone;
        // hydrated_range and bundle_member rows go by ON DELETE CASCADE.
        try db.cachedStatement(sql: """
            DELETE FROM item WHERE id IN (
                WITH RECURSIVE subtree (id) AS (
                    SELECT ?
                    UNION
                    SELECT item.id FROM item JOIN subtree ON item.parent_id = subtree.id
                )
                SELECT id FROM subtree
            )
            """).execute(arguments: [id.rawValue])
    }

    // MARK: - Ranges and anchor

    private static func setHydratedRanges(of id: ItemIdentifier, to ranges: RangeSet, version: ETag?,
                                          in db: Database) throws {
        try db.cachedStatement(sql: "UPDATE item SET hydrated_etag = ?, hydrated_etag_weak = ? WHERE id = ?")
            .execute(arguments: [version?.value, version?.isWeak ?? false, id.rawValue])
        guard db.changesCount > 0 else {
            throw ProviderError(.noSuchItem, "cannot record hydrated ranges of item \(id): it is not in the state DB")
        }
        try db.cachedStatement(sql: "DELETE FROM hydrated_range WHERE item_id = ?").execute(arguments: [id.rawValue])
        let insert = try db.cachedStatement(sql: """
            INSERT INTO hydrated_range (item_id, start_offset, end_offset) VALUES (?, ?, ?)
            """)
        for range in ranges.ranges {
            try insert.execute(arguments: [id.rawValue, range.offset, range.end])
        }
    }

    private static func setSyncAnchor(_ anchor: SyncAnchor?, in db: Database) throws {
        if let anchor {
            try db.cachedStatement(sql: """
                INSERT INTO domain_state (key, value) VALUES (?, ?)
                ON CONFLICT (key) DO UPDATE SET value = excluded.value
                """).execute(arguments: [syncAnchorKey, anchor.rawValue])
        } else {
            try db.cachedStatement(sql: "DELETE FROM domain_state WHERE key = ?").execute(arguments: [syncAnchorKey])
        }
    }
}
