// The rows' version and the last remote walk that agreed with them (migration v6): a pass
// in a new process (the daemon's start, `run --once`) whose walk lists what that walk
// listed, with no row written since, needs no row compared with the listing.

import GRDB
import SyncEngine

extension StateDatabase {
    /// `rows_version`: bumped by a trigger on every write to the rows a pass plans from, by
    /// any process; nil when it cannot be read (every walk is then compared with the rows).
    public func itemsGeneration() -> Int64? {
        try? read("read the rows' version") { db in
            try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM rows_version WHERE id = 1"))
        }
    }

    /// The last walk a pass found agreeing with the rows, with the rows' version then.
    public func matchedWalk() throws(ProviderError) -> StoredMatchedWalk? {
        try read("read the last agreeing walk") { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT digest, rows_version FROM matched_walk WHERE id = 1"))
                .map { StoredMatchedWalk(digest: $0[0], generation: $0[1]) }
        }
    }

    /// Replaces the last agreeing walk; writes nothing when it is the one already kept.
    public func recordMatchedWalk(_ walk: StoredMatchedWalk) throws(ProviderError) {
        guard !isReadOnly, try matchedWalk() != walk else { return }
        try write("record the last agreeing walk") { db in
            try db.execute(sql: """
                INSERT INTO matched_walk (id, digest, rows_version) VALUES (1, ?, ?)
                ON CONFLICT (id) DO UPDATE SET digest = excluded.digest, rows_version = excluded.rows_version
                """, arguments: [walk.digest, walk.generation])
        }
    }
}
