// The deletions the last pass held back (a side emptied at once, or more than max_delete),
// kept as one JSON value in `domain_state` (key `held_deletions`), so `tidesync status`
// shows them while the daemon is not running (after a `run --once` that held them).

import Foundation
import GRDB
import SyncEngine

extension StateDatabase {
    /// The `domain_state` key of the last pass's held deletions.
    static let heldDeletionsKey = "held_deletions"

    /// What the last pass held back; nil when nothing (or the value is unreadable).
    public func heldDeletions() throws(ProviderError) -> DeletionHold.Summary? {
        let text = try read("read the held deletions") { db in
            try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM domain_state WHERE key = ?"),
                                arguments: [Self.heldDeletionsKey])
        }
        return text.flatMap { try? JSONDecoder().decode(DeletionHold.Summary.self, from: Data($0.utf8)) }
    }

    /// Replaces what the last pass held back; a pass that holds what the one before held
    /// writes nothing (most passes hold nothing, and neither did the one before).
    public func recordHeldDeletions(_ held: DeletionHold.Summary?) throws(ProviderError) {
        guard try heldDeletions() != held else { return }
        try write("record the held deletions") { db in
            if let held, let json = try? JSONEncoder().encode(held) {
                try db.execute(sql: """
                    INSERT INTO domain_state (key, value) VALUES (?, ?)
                    ON CONFLICT (key) DO UPDATE SET value = excluded.value
                    """, arguments: [Self.heldDeletionsKey, String(decoding: json, as: UTF8.self)])
            } else {
                try db.execute(sql: "DELETE FROM domain_state WHERE key = ?", arguments: [Self.heldDeletionsKey])
            }
        }
    }
}
