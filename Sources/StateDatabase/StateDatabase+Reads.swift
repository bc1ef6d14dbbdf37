import Foundation
import GRDB
import SyncEngine
import SyncModel

// The read half of `StateStore`. Each call is one read transaction on a reader connection.
extension StateDatabase {
    /// The item with identifier `id`, or nil.
    public func item(_ id: ItemIdentifier) throws(ProviderError) -> ItemRecord? {
        try read("read item \(id)") { db in
            try Self.fetchItems(db, sql: "SELECT \(ItemColumn.selection) FROM item WHERE id = ?",
                                arguments: [id.rawValue]).first
        }
    }

    /// The child of `parent` whose name has exactly the bytes of `name` (no normalisation).
    public func item(parent: ItemIdentifier, name: String) throws(ProviderError) -> ItemRecord? {
        try read("read the item named \"\(name)\" in folder \(parent)") { db in
            try Self.child(of: parent, named: name, in: db)
        }
    }

    public func item(_ id: ItemIdentifier?, andChildOf parent: ItemIdentifier,
                     named name: String) throws(ProviderError) -> (byID: ItemRecord?, child: ItemRecord?) {
        try read("read item \(id?.rawValue ?? "-") and the item named \"\(name)\" in folder \(parent)") { db in
            let byID = try id.flatMap { id in
                try Self.fetchItems(db, sql: "SELECT \(ItemColumn.selection) FROM item WHERE id = ?", arguments: [id.rawValue]).first
            }
            return (byID, try Self.child(of: parent, named: name, in: db))
        }
    }

    /// The children of `parent`, in byte order of their names.
    public func children(of parent: ItemIdentifier) throws(ProviderError) -> [ItemRecord] {
        try read("list the children of item \(parent)") { db in
            try Self.fetchItems(db, sql: "SELECT \(ItemColumn.selection) FROM item WHERE parent_id = ? ORDER BY name",
                                arguments: [parent.rawValue])
        }
    }

    /// How many item rows there are, the root's included (no row is read).
    public func itemCount() throws(ProviderError) -> Int {
        try read("count the items") { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM item") ?? 0 }
    }

    /// Every item reachable from the root, parents before children: by depth, then by parent,
    /// then by name. `apply` refuses moves that would cut an item off from the root.
    public func allItems() throws(ProviderError) -> [ItemRecord] {
        try read("list all items") { db in
            try Self.fetchItems(db, sql: """
                WITH RECURSIVE tree (id, depth) AS (
                    SELECT id, 0 FROM item WHERE parent_id IS NULL
                    UNION ALL
                    SELECT item.id, tree.depth + 1 FROM item JOIN tree ON item.parent_id = tree.id
                )
                SELECT \(ItemColumn.selection) FROM tree JOIN item ON item.id = tree.id
                ORDER BY tree.depth, item.parent_id, item.name
                """, arguments: [])
        }
    }

    /// The item whose recorded local inode is `inode`; the first by identifier if several are.
    public func item(localInode inode: UInt64) throws(ProviderError) -> ItemRecord? {
        try read("look up local inode \(inode)") { db in
            try Self.fetchItems(db, sql: "SELECT \(ItemColumn.selection) FROM item WHERE local_inode = ? ORDER BY id LIMIT 1",
                                arguments: [Int64(bitPattern: inode)]).first
        }
    }

    /// The item whose server file id is `fileID`; the first by identifier if several are.
    public func item(remoteFileID fileID: String) throws(ProviderError) -> ItemRecord? {
        try read("look up remote file id \(fileID)") { db in
            try Self.fetchItems(db, sql: "SELECT \(ItemColumn.selection) FROM item WHERE remote_file_id = ? ORDER BY id LIMIT 1",
                                arguments: [fileID]).first
        }
    }

    /// The working set's anchor; nil before the first enumeration.
    public func syncAnchor() throws(ProviderError) -> SyncAnchor? {
        try read("read the sync anchor") { db in
            try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM domain_state WHERE key = ?"),
                                arguments: [Self.syncAnchorKey]).map(SyncAnchor.init)
        }
    }

    /// The remote the rows describe; nil before it was first recorded.
    public func remoteIdentity() throws(ProviderError) -> RemoteIdentity? {
        try read("read the remote's identity") { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT location, root_file_id FROM remote_identity WHERE id = 1"))
                .map { RemoteIdentity(location: $0["location"], rootFileID: $0["root_file_id"]) }
        }
    }

    /// The hydrated ranges of `id` and the version they belong to; empty and nil for an item
    /// with none recorded, or not in the DB.
    public func hydratedRanges(of id: ItemIdentifier) throws(ProviderError) -> (ranges: RangeSet, version: ETag?) {
        try read("read the hydrated ranges of item \(id)") { db in
            let version = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT hydrated_etag, hydrated_etag_weak FROM item WHERE id = ?"),
                arguments: [id.rawValue]
            ).flatMap { row -> ETag? in
                guard let value = try row.decode(String?.self, atIndex: 0) else { return nil }
                return ETag(value: value, isWeak: try row.decode(Bool.self, atIndex: 1))
            }
            let rows = try Row.fetchAll(
                db.cachedStatement(sql: "SELECT start_offset, end_offset FROM hydrated_range WHERE item_id = ? ORDER BY start_offset"),
                arguments: [id.rawValue])
            let ranges = try rows.map { row in
                let start: Int64 = try row.decode(atIndex: 0)
                return ByteRange(offset: start, length: try row.decode(Int64.self, atIndex: 1) - start)
            }
            return (RangeSet(ranges), version)
        }
    }

    public func bundleMembers(of id: ItemIdentifier) throws(ProviderError) -> [BundleMember] {
        try read("read the manifest of bundle \(id)") { db in
            let rows = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT relative_path, kind, size, content_hash, remote_etag, remote_etag_weak, symlink_target,
                       local_inode, local_mtime_ns
                FROM bundle_member WHERE bundle_id = ? ORDER BY relative_path
                """), arguments: [id.rawValue])
            return try rows.map { row in
                let kindName: String = try row.decode(atIndex: 1)
                guard let kind = ItemKind(rawValue: kindName) else {
                    throw DatabaseError(message: "bundle member of unknown kind \(kindName)")
                }
                let size: Int64 = try row.decode(atIndex: 2)
                let etag = try row.decode(String?.self, atIndex: 4).map { ETag(value: $0, isWeak: try row.decode(Bool.self, atIndex: 5)) }
                var local: LocalStat?
                if let inode = try row.decode(Int64?.self, atIndex: 7), let mtime = try row.decode(Int64?.self, atIndex: 8) {
                    local = LocalStat(inode: UInt64(bitPattern: inode), size: size, modificationTimeNanoseconds: mtime)
                }
                return BundleMember(relativePath: try row.decode(atIndex: 0), kind: kind, size: size,
                                    contentHash: try row.decode(atIndex: 3), remoteETag: etag,
                                    symlinkTarget: try row.decode(atIndex: 6), local: local)
            }
        }
    }

    /// The journal, oldest first.
    public func pendingOperations() throws(ProviderError) -> [PendingOperation] {
        try read("read the journal") { db in
            let statement = try db.cachedStatement(sql: "SELECT \(PendingOperation.selection) FROM pending_operation ORDER BY id")
            return try Row.fetchAll(statement).map(PendingOperation.init(row:))
        }
    }

    // MARK: - Shared with the write half

    /// The `domain_state` key of the sync anchor.
    static let syncAnchorKey = "sync_anchor"

    /// Items selected with `ItemColumn.selection`, decoded row by row from a cached statement.
    static func fetchItems(_ db: Database, sql: String, arguments: StatementArguments) throws -> [ItemRecord] {
        let rows = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: arguments)
        var items: [ItemRecord] = []
        while let row = try rows.next() {
            items.append(try ItemRecord(row: row))
        }
        return items
    }

    static func child(of parent: ItemIdentifier, named name: String, in db: Database) throws -> ItemRecord? {
        try fetchItems(db, sql: "SELECT \(ItemColumn.selection) FROM item WHERE parent_id = ? AND name = ?",
                       arguments: [parent.rawValue, name]).first
    }
}
