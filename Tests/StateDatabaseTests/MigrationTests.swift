import Foundation
@testable import StateDatabase
import SyncEngine
import SyncModel
import Testing

/// Opening state DBs written by earlier schemas, and refusing ones written by later ones.
///
/// This suite is the template for every migration that follows v1. `V1Fixture.schema` is the
/// v1 DDL exactly as it landed, copied here on purpose: it must never follow edits to
/// `StateSchema`, because the files in the field were made by this text. When you append a
/// migration vN, add its landed DDL as a fixture too, build a v(N-1) file from the fixtures,
/// fill it, open it with `StateDatabase(path:)` and check that its rows read back.
@Suite struct MigrationTests {
    @Test func aDatabaseMadeByV1OpensWithItsRows() throws {
        try withScratchDirectory { directory in
            let path = directory + "/old.sqlite"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try StateDatabase.executeScript(V1Fixture.schema + V1Fixture.migrationsTable + V1Fixture.rows, onFileAt: path)

            let database = try StateDatabase(path: path)
            defer { try? database.close() }

            #expect(try database.column("SELECT identifier FROM grdb_migrations ORDER BY identifier")
                    == ["v1-items-journal", "v2-conflicts", "v3-bundle-member-local", "v4-remote-identity", "v5-item-local-birth",
                       "v6-rows-version-matched-walk"])
            // v4: a DB from before identities were kept records none; the first pass records it.
            #expect(try database.remoteIdentity() == nil)
            // v5: a row from before birth times were kept knows none (0), which matches any.
            #expect(try database.column("SELECT DISTINCT local_birth_ns FROM item") == ["0"])
            // v6: no walk is kept; the rows' version starts at 0 and counts from here.
            #expect(try database.matchedWalk() == nil)
            #expect(database.itemsGeneration() == 0)
            let folder = ItemRecord(id: ItemIdentifier("f-1"), parentID: .root, name: "Docs", kind: .folder,
                                    remoteETag: ETag(value: "d1"), remoteFileID: "101", pinState: .pinned)
            let document = ItemRecord(
                id: ItemIdentifier("f-2"), parentID: ItemIdentifier("f-1"), name: "cafe\u{301}.txt", kind: .file,
                size: 42, remoteETag: ETag(value: "e2", isWeak: true), remoteFileID: "102",
                contentHash: "sha256:00ff",
                local: LocalStat(inode: UInt64.max - 1, size: 42, modificationTimeNanoseconds: 1_790_000_000_000_000_001),
                materialization: .partial, pinState: .inherited)
            #expect(try database.allItems() == [ItemRecord(id: .root, parentID: nil, name: "", kind: .folder), folder, document])
            #expect(try database.item(parent: folder.id, name: "cafe\u{301}.txt")?.id == document.id)
            #expect(try database.item(localInode: UInt64.max - 1)?.id == document.id)
            let hydrated = try database.hydratedRanges(of: document.id)
            #expect(hydrated.ranges == RangeSet([ByteRange(offset: 0, length: 10), ByteRange(offset: 20, length: 5)]))
            #expect(hydrated.version == ETag(value: "e2", isWeak: true))
            #expect(try database.syncAnchor() == SyncAnchor("anchor-v1"))
            #expect(try database.pendingOperations() == [PendingOperation(
                id: 7, itemID: document.id, kind: "upload", payload: Data("{}".utf8),
                createdAt: Date(timeIntervalSince1970: 1_790_000_000.5), attempts: 1,
                notBefore: Date(timeIntervalSince1970: 1_790_000_030), lastError: "HTTP 503")])
            #expect(try database.count("SELECT count(*) FROM bundle_member") == 1)
            // The journal keeps counting after the ids it found.
            #expect(try database.journal(operation("download")) == 8)
        }
    }

    @Test func aDatabaseMadeByV1EndsWithTheSchemaOfAFreshOne() throws {
        try withScratchDirectory { directory in
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let upgradedPath = directory + "/old.sqlite"
            try StateDatabase.executeScript(V1Fixture.schema + V1Fixture.migrationsTable, onFileAt: upgradedPath)
            let upgraded = try StateDatabase(path: upgradedPath)
            let fresh = try StateDatabase(path: directory + "/fresh.sqlite")
            defer {
                try? upgraded.close()
                try? fresh.close()
            }
            let schema = "SELECT type || ' ' || name || ': ' || sql FROM sqlite_master "
                + "WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'grdb_%' ORDER BY name"
            let freshSchema = try fresh.column(schema)
            #expect(freshSchema.count == 30)  // nine tables, three indexes, eighteen triggers
            #expect(try upgraded.column(schema) == freshSchema)
        }
    }

    @Test func theRemoteIdentityIsOneRowThatIsReplaced() throws {
        try withScratchDirectory { directory in
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let database = try StateDatabase(path: directory + "/state.sqlite")
            defer { try? database.close() }
            try database.apply([.setRemoteIdentity(RemoteIdentity(location: "https://a.example/dav/", rootFileID: "7"))])
            try database.apply([.setRemoteIdentity(RemoteIdentity(location: "file:///srv/b"))])
            #expect(try database.remoteIdentity() == RemoteIdentity(location: "file:///srv/b"))
            #expect(try database.count("SELECT count(*) FROM remote_identity") == 1)
        }
    }

    @Test func aDatabaseMigratedByANewerTidesyncIsRefused() throws {
        try withScratchDirectory { directory in
            let path = directory + "/newer.sqlite"
            try StateDatabase(path: path).close()
            try StateDatabase.executeScript("INSERT INTO grdb_migrations (identifier) VALUES ('v9-from-the-future')",
                                            onFileAt: path)

            let expected = "the state DB \(path) was written by a newer tidesync (migration v9-from-the-future); upgrade tidesync"
            let readOnly = #expect(throws: ProviderError.self) { _ = try StateDatabase(readOnlyPath: path) }
            #expect(readOnly?.code == .cannotSynchronize)
            #expect(readOnly?.message == expected)
            let readWrite = #expect(throws: ProviderError.self) { _ = try StateDatabase(path: path) }
            #expect(readWrite?.message == expected)
        }
    }

    @Test func aFileWithoutTheSchemaIsRefusedReadOnly() throws {
        try withScratchDirectory { directory in
            let path = directory + "/foreign.sqlite"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try StateDatabase.executeScript("CREATE TABLE notes (body TEXT)", onFileAt: path)
            let error = #expect(throws: ProviderError.self) { _ = try StateDatabase(readOnlyPath: path) }
            #expect(error?.code == .cannotSynchronize)
            #expect(error?.message.contains("not a tidesync state DB") == true)
        }
    }
}

/// The v1 state DB, as `v1-items-journal` made it.
enum V1Fixture {
    /// The DDL of migration `v1-items-journal` exactly as it landed. Never edit it.
    static let schema = """
        -- The middle-man state of every item (DESIGN.md, "Three states"): what the remote and
        -- the local side last agreed on. The root row is inserted below.
        CREATE TABLE item (
            -- The ItemIdentifier: 'root' or a UUID string; never a path.
            id                  TEXT NOT NULL PRIMARY KEY,
            -- The containing folder; NULL only for the root.
            parent_id           TEXT REFERENCES item (id),
            -- The name in the parent, byte-exact; '' only for the root.
            name                TEXT NOT NULL COLLATE BINARY,
            kind                TEXT NOT NULL CHECK (kind IN ('file', 'folder', 'symlink', 'bundle')),
            -- Content bytes at the last sync; 0 for folders.
            size                INTEGER NOT NULL CHECK (size >= 0),
            -- The remote ETag (the content version) the local copy is based on, without quotes
            -- or W/; NULL before the first sync. remote_etag_weak: 1 when the server sent it weak.
            remote_etag         TEXT,
            remote_etag_weak    INTEGER NOT NULL DEFAULT 0 CHECK (remote_etag_weak IN (0, 1)),
            -- The server's stable file id (oc:fileid, or a local store's inode), when it has one.
            remote_file_id      TEXT,
            -- For symlinks, the target as written.
            symlink_target      TEXT,
            -- 'sha256:<hex>' of the synced content.
            content_hash        TEXT,
            -- The local stat right after the last sync: all three, or none when nothing is on
            -- disk yet. local_inode holds the unsigned 64-bit st_ino as its two's-complement bit
            -- pattern, so inodes of 2^63 and above read back negative here.
            local_inode         INTEGER,
            local_size          INTEGER,
            -- Nanoseconds since 1970-01-01 UTC.
            local_mtime_ns      INTEGER,
            materialization     TEXT NOT NULL CHECK (materialization IN ('dataless', 'partial', 'materialized')),
            pin_state           TEXT NOT NULL CHECK (pin_state IN ('inherited', 'pinned', 'unpinned')),
            -- The remote ETag the item's hydrated_range rows belong to (same form as remote_etag);
            -- NULL when no version was recorded with them.
            hydrated_etag       TEXT,
            hydrated_etag_weak  INTEGER NOT NULL DEFAULT 0 CHECK (hydrated_etag_weak IN (0, 1)),
            CHECK ((parent_id IS NULL) = (id = 'root')),
            CHECK ((name = '') = (id = 'root')),
            CHECK ((local_inode IS NULL) = (local_size IS NULL)
                   AND (local_size IS NULL) = (local_mtime_ns IS NULL)),
            UNIQUE (parent_id, name)
        ) STRICT;

        -- Rename detection: local (by inode) and remote (by file id).
        CREATE INDEX item_by_local_inode ON item (local_inode);
        CREATE INDEX item_by_remote_file_id ON item (remote_file_id);

        -- The hydrated bytes of a partial file: half-open ranges [start_offset, end_offset),
        -- disjoint and not touching, belonging to item.hydrated_etag. Data is fsynced before
        -- its range is recorded here (DESIGN.md, "Dataless placeholders").
        CREATE TABLE hydrated_range (
            item_id             TEXT NOT NULL REFERENCES item (id) ON DELETE CASCADE,
            start_offset        INTEGER NOT NULL CHECK (start_offset >= 0),
            end_offset          INTEGER NOT NULL CHECK (end_offset > start_offset),
            PRIMARY KEY (item_id, start_offset)
        ) STRICT;

        -- The manifest of a bundle (DESIGN.md, "Bundles"): one row per member below it, so a
        -- modified bundle re-uploads only the members that changed. Written and read by the
        -- bundles work; v1 only creates the table.
        CREATE TABLE bundle_member (
            bundle_id           TEXT NOT NULL REFERENCES item (id) ON DELETE CASCADE,
            -- The member's path below the bundle, '/'-separated, byte-exact.
            relative_path       TEXT NOT NULL COLLATE BINARY,
            kind                TEXT NOT NULL CHECK (kind IN ('file', 'folder', 'symlink')),
            size                INTEGER NOT NULL CHECK (size >= 0),
            content_hash        TEXT,
            remote_etag         TEXT,
            remote_etag_weak    INTEGER NOT NULL DEFAULT 0 CHECK (remote_etag_weak IN (0, 1)),
            PRIMARY KEY (bundle_id, relative_path)
        ) STRICT;

        -- Values of the domain by key. 'sync_anchor': the working set's anchor, absent before
        -- the first enumeration.
        CREATE TABLE domain_state (
            key                 TEXT NOT NULL PRIMARY KEY,
            value               TEXT NOT NULL
        ) STRICT;

        -- The journal: an operation is written here before it starts and deleted in the
        -- transaction that records its result, so after a crash what is left is replayed.
        -- item_id has no foreign key: an operation may outlive its item's row.
        CREATE TABLE pending_operation (
            -- Increasing in journal order, never reused (AUTOINCREMENT).
            id                  INTEGER PRIMARY KEY AUTOINCREMENT,
            item_id             TEXT,
            -- The engine's vocabulary: 'upload', 'download', 'move', ...
            kind                TEXT NOT NULL,
            -- The operation's arguments as the engine encoded them (JSON).
            payload             BLOB NOT NULL,
            -- Seconds since 1970-01-01 UTC.
            created_at          REAL NOT NULL,
            -- Failed tries so far.
            attempts            INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
            -- Seconds since 1970-01-01 UTC before which it is not retried; NULL: at once.
            not_before          REAL,
            last_error          TEXT
        ) STRICT;

        INSERT INTO item (id, parent_id, name, kind, size, materialization, pin_state)
        VALUES ('root', NULL, '', 'folder', 0, 'materialized', 'inherited');
        """

    /// The table GRDB's migrator keeps, recording v1 as applied.
    static let migrationsTable = """

        CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
        INSERT INTO grdb_migrations (identifier) VALUES ('v1-items-journal');
        """

    /// One row in every table, in the forms v1 stores: an inode above 2^63 as a negative
    /// bit pattern, times as seconds since 1970, an NFD name.
    static let rows = """

        INSERT INTO item (id, parent_id, name, kind, size, remote_etag, remote_etag_weak, remote_file_id,
                          materialization, pin_state)
        VALUES ('f-1', 'root', 'Docs', 'folder', 0, 'd1', 0, '101', 'materialized', 'pinned');
        INSERT INTO item (id, parent_id, name, kind, size, remote_etag, remote_etag_weak, remote_file_id,
                          content_hash, local_inode, local_size, local_mtime_ns, materialization, pin_state,
                          hydrated_etag, hydrated_etag_weak)
        VALUES ('f-2', 'f-1', 'cafe\u{301}.txt', 'file', 42, 'e2', 1, '102', 'sha256:00ff', -2, 42,
                1790000000000000001, 'partial', 'inherited', 'e2', 1);
        INSERT INTO hydrated_range (item_id, start_offset, end_offset) VALUES ('f-2', 0, 10), ('f-2', 20, 25);
        INSERT INTO bundle_member (bundle_id, relative_path, kind, size, content_hash)
        VALUES ('f-2', 'Contents/Info.plist', 'file', 10, 'sha256:11');
        INSERT INTO domain_state (key, value) VALUES ('sync_anchor', 'anchor-v1');
        INSERT INTO pending_operation (id, item_id, kind, payload, created_at, attempts, not_before, last_error)
        VALUES (7, 'f-2', 'upload', CAST('{}' AS BLOB), 1790000000.5, 1, 1790000030.0, 'HTTP 503');
        """
}
