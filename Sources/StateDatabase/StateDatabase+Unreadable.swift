// The folders the last pass could not list, kept as one JSON value in `domain_state` (key
// `unreadable_folders`): the next pass looks at them again and `tidesync status` lists
// them, also when the daemon is not running. Same durability as every other write.

import Foundation
import GRDB
import SyncEngine

extension StateDatabase {
    /// The `domain_state` key of the folders the last pass could not list (a JSON array).
    static let unreadableFoldersKey = "unreadable_folders"

    /// The folders the last pass could not list; empty when none (or the value is unreadable,
    /// which only costs the next pass its head start on them).
    public func unreadableFolders() throws(ProviderError) -> [UnreadableFolder] {
        let text = try read("read the folders that could not be listed") { db in
            try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM domain_state WHERE key = ?"),
                                arguments: [Self.unreadableFoldersKey])
        }
        guard let text else { return [] }
        return (try? JSONDecoder().decode([UnreadableFolder].self, from: Data(text.utf8))) ?? []
    }

    /// Replaces the list; durable when it returns.
    public func recordUnreadableFolders(_ folders: [UnreadableFolder]) throws(ProviderError) {
        let sorted = folders.sorted { ($0.path, $0.side.rawValue) < ($1.path, $1.side.rawValue) }
        let text = String(decoding: (try? JSONEncoder().encode(sorted)) ?? Data("[]".utf8), as: UTF8.self)
        try write("record the folders that could not be listed") { db in
            if sorted.isEmpty {
                try db.execute(sql: "DELETE FROM domain_state WHERE key = ?", arguments: [Self.unreadableFoldersKey])
            } else {
                try db.execute(sql: """
                    INSERT INTO domain_state (key, value) VALUES (?, ?)
                    ON CONFLICT (key) DO UPDATE SET value = excluded.value
                    """, arguments: [Self.unreadableFoldersKey, text])
            }
        }
    }
}
