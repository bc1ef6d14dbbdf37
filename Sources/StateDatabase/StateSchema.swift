// The state DB's schema, as a list of migrations.
//
// APPEND-ONLY. A migration that has landed is never edited, renamed, reordered or
// removed: state DBs in the field have run it and recorded its name in
// `grdb_migrations`, and a DB built from the landed text must keep opening. A schema
// change is a new migration appended at the end, named `v<N>-<what-it-does>`, written in
// literal SQL. When you append one, extend `Tests/StateDatabaseTests/MigrationTests.swift`:
// its fixture is the v1 DDL exactly as it landed, and the test opens a DB built from it.
//
// Tables are STRICT, so a value of the wrong type is refused rather than stored. Names
// compare byte-exact (BINARY collation: memcmp of the UTF-8 bytes), so NFC and NFD
// spellings of one name are two names, as they are on a Linux disk.

import GRDB

/// The migrations of the state DB, in order.
enum StateSchema {
    /// The migrator holding every migration this binary knows, oldest first.
    static let migrator: DatabaseMigrator = {
        var migrator = DatabaseMigrator()
        migrator.registerMigration(v1Name) { db in
            try db.execute(sql: v1SQL)
        }
        migrator.registerMigration(v2Name) { db in
            try db.execute(sql: v2SQL)
        }
        migrator.registerMigration(v3Name) { db in
            try db.execute(sql: v3SQL)
        }
        migrator.registerMigration(v4Name) { db in
            try db.execute(sql: v4SQL)
        }
        migrator.registerMigration(v5Name) { db in
            try db.execute(sql: v5SQL)
        }
        migrator.registerMigration(v6Name) { db in
            try db.execute(sql: v6SQL)
        }
        return migrator
    }()

    /// The first migration: items, hydrated ranges, bundle manifests, domain state and the journal.
    static let v1Name = "v1-items-journal"

    static let v1SQL = """
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

    /// The second migration: the list of conflict copies made.
    static let v2Name = "v2-conflicts"

    static let v2SQL = """
        -- Conflict copies made (DESIGN.md, "Conflicts"), for `tidesync conflicts` and the
        -- conflict count of `tidesync status`. A row is written when this machine's version
        -- has been renamed to copy_path; rows are never changed afterwards.
        CREATE TABLE conflict (
            -- Increasing in the order conflicts were recorded (AUTOINCREMENT).
            id                  INTEGER PRIMARY KEY AUTOINCREMENT,
            -- The path both sides changed, '/'-separated below the domain root, byte-exact;
            -- the remote version keeps this name.
            original_path       TEXT NOT NULL COLLATE BINARY,
            -- Where this machine's version was kept, on both sides.
            copy_path           TEXT NOT NULL COLLATE BINARY,
            kind                TEXT NOT NULL CHECK (kind IN ('file', 'folder', 'symlink', 'bundle')),
            -- Seconds since 1970-01-01 UTC: when the plan found the conflict.
            detected_at         REAL NOT NULL,
            -- The remote ETag both sides last agreed on, without quotes or W/; NULL when the
            -- local item was new.
            base_etag           TEXT,
            -- The remote ETag that keeps original_path; NULL when that is not a file.
            remote_etag         TEXT,
            -- This machine's version when the conflict was found: bytes, and nanoseconds
            -- since 1970-01-01 UTC.
            local_size          INTEGER NOT NULL CHECK (local_size >= 0),
            local_mtime_ns      INTEGER NOT NULL
        ) STRICT;

        CREATE INDEX conflict_by_detected_at ON conflict (detected_at);
        """

    static let v3Name = "v3-bundle-member-local"

    static let v3SQL = """
        -- What a bundle manifest needs besides v1's columns: a symlink member's target, and the
        -- member's local inode and mtime when the bundle was last synced, so an unchanged
        -- member is not hashed again (its size is the size column).
        ALTER TABLE bundle_member ADD COLUMN symlink_target TEXT;
        ALTER TABLE bundle_member ADD COLUMN local_inode INTEGER;
        ALTER TABLE bundle_member ADD COLUMN local_mtime_ns INTEGER;
        """

    static let v4Name = "v4-remote-identity"

    static let v4SQL = """
        -- Which remote the item rows describe (DESIGN.md, "Safety rails"): at most one row. A
        -- pass that finds the domain pointed at another remote drops the item rows and the
        -- journal and replaces this row in one transaction, then merges both trees as a
        -- first sync. No row: a DB from before this migration, or one that never synced.
        CREATE TABLE remote_identity (
            -- Always 1: the table holds one row.
            id                  INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
            -- The normalised URL (no credentials, lower-case scheme and host, no default
            -- port, path ending in '/'), or 'file://' and the absolute path of a local store.
            location            TEXT NOT NULL,
            -- The file id of the remote's root (oc:fileid, a local store's inode); NULL when
            -- the server reports none.
            root_file_id        TEXT,
            -- Seconds since 1970-01-01 UTC: when this row was written.
            recorded_at         REAL NOT NULL
        ) STRICT;
        """

    static let v5Name = "v5-item-local-birth"

    static let v5SQL = """
        -- The local inode's birth time (statx STATX_BTIME), nanoseconds since 1970: with the
        -- inode number it names one file, so a new file that the kernel gave a deleted
        -- file's number (and `cp -p` or a download its size and mtime) is not taken for it.
        -- 0: not known (a file system without birth times, a row from before this column).
        ALTER TABLE item ADD COLUMN local_birth_ns INTEGER NOT NULL DEFAULT 0;
        """

    static let v6Name = "v6-rows-version-matched-walk"

    static let v6SQL = """
        -- A number that every write to the rows a pass plans from changes, kept by triggers so
        -- that a write from any process or connection counts: a remote walk that lists what
        -- the last walk agreeing with the rows listed, with this number unchanged since, needs
        -- no row compared (SyncProvider.walkMatching), also in a new process. Not
        -- domain_state (the sync anchor): a walk meeting excluded names writes a new anchor
        -- each time.
        CREATE TABLE rows_version (
            -- Always 1: the table holds one row.
            id                  INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
            value               INTEGER NOT NULL
        ) STRICT;
        INSERT INTO rows_version (id, value) VALUES (1, 0);
        CREATE TRIGGER item_insert_bumps_rows_version AFTER INSERT ON item
            BEGIN UPDATE rows_version SET value = value + 1; END;
        CREATE TRIGGER item_update_bumps_rows_version AFTER UPDATE ON item
            BEGIN UPDATE rows_version SET value = value + 1; END;
        CREATE TRIGGER item_delete_bumps_rows_version AFTER DELETE ON item
            BEGIN UPDATE rows_version SET value = value + 1; END;
        CREATE TRIGGER hydrated_range_insert_bumps_rows_version AFTER INSERT ON hydrated_range
            BEGIN UPDATE rows_version SET value = value + 1; END;
        CREATE TRIGGER hydrated_range_update_bumps_rows_version AFTER UPDATE ON hydrated_range
            BEGIN UPDATE rows_version SET value = value + 1; END;
        CREATE TRIGGER hydrated_range_delete_bumps_rows_version AFTER DELETE ON hydrated_range
            BEGIN UPDATE rows_version SET value = value + 1; END;
        CREATE TRIGGER bundle_member_insert_bumps_rows_version AFTER INSERT ON bundle_member
            BEGIN UPDATE rows_version SET value = value + 1; END;
        CREATE TRIGGER bundle_member_update_bumps_rows_version AFTER UPDATE ON bundle_member
            BEGIN UPDATE rows_version SET value = value + 1; END;
        CREATE TRIGGER bundle_member_delete_bumps_rows_version AFTER DELETE ON bundle_member
            BEGIN UPDATE rows_version SET value = value + 1; END;
        CREATE TRIGGER pending_operation_insert_bumps_rows_version AFTER INSERT ON pending_operation
            BEGIN UPDATE rows_version SET value = value + 1; END;
        CREATE TRIGGER pending_operation_update_bumps_rows_version AFTER UPDATE ON pending_operation
            BEGIN UPDATE rows_version SET value = value + 1; END;
        CREATE TRIGGER pending_operation_delete_bumps_rows_version AFTER DELETE ON pending_operation
            BEGIN UPDATE rows_version SET value = value + 1; END;
        CREATE TRIGGER conflict_insert_bumps_rows_version AFTER INSERT ON conflict
            BEGIN UPDATE rows_version SET value = value + 1; END;
        CREATE TRIGGER conflict_update_bumps_rows_version AFTER UPDATE ON conflict
            BEGIN UPDATE rows_version SET value = value + 1; END;
        CREATE TRIGGER conflict_delete_bumps_rows_version AFTER DELETE ON conflict
            BEGIN UPDATE rows_version SET value = value + 1; END;
        CREATE TRIGGER remote_identity_insert_bumps_rows_version AFTER INSERT ON remote_identity
            BEGIN UPDATE rows_version SET value = value + 1; END;
        CREATE TRIGGER remote_identity_update_bumps_rows_version AFTER UPDATE ON remote_identity
            BEGIN UPDATE rows_version SET value = value + 1; END;
        CREATE TRIGGER remote_identity_delete_bumps_rows_version AFTER DELETE ON remote_identity
            BEGIN UPDATE rows_version SET value = value + 1; END;

        -- The last remote walk a pass found agreeing with the rows: the listing's digest
        -- (ListingDigest, hex) and rows_version read before those rows. At most one row.
        CREATE TABLE matched_walk (
            id                  INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
            digest              TEXT NOT NULL,
            rows_version        INTEGER NOT NULL
        ) STRICT;
        """
}
