import Foundation
@testable import SyncEngine
import SyncModel
import Testing
import TestSupport

/// The state DB's rows as a tree (built once per pass by walking down from the root): the
/// same rows, paths and order as resolving each row's parent chain and sorting the paths,
/// on random trees with orphans, loops, invalid names and names that differ only in case or
/// Unicode normalisation.
@Suite("RecordTree: the rows as a tree, in path order")
struct RecordTreeTests {
    /// Each row's path by walking its parent chain; nil when the chain does not reach the
    /// root, loops, or holds a name no path may have.
    static func chainPath(_ id: ItemIdentifier, _ byID: [ItemIdentifier: ItemRecord]) -> RemotePath? {
        var names: [String] = []
        var seen: Set<ItemIdentifier> = []
        var cursor = id
        while cursor != .root {
            guard let record = byID[cursor], record.parentID != nil, seen.insert(cursor).inserted else { return nil }
            names.append(record.name)
            cursor = record.parentID!
        }
        return try? RemotePath(names.reversed())
    }

    static func randomRows(seed: UInt64) -> [ItemRecord] {
        var random = SeededRandom(seed: seed)
        let names = ["a", "B", "b", "é", "e\u{301}", "Z", "aa", "a b", "ü.txt", "x.app", "..", "", "a/b", "0", "~"]
        var rows = [ItemRecord(id: .root, parentID: nil, name: "", kind: .folder)]
        var taken: Set<String> = []
        let count = Int.random(in: 1...200, using: &random)
        for index in 0..<count {
            let parent: ItemIdentifier = switch Int.random(in: 0..<10, using: &random) {
            case 0..<3: .root
            case 3: ItemIdentifier("missing-\(index)")
            case 4: ItemIdentifier("row-\(Int.random(in: 0..<count, using: &random))")  // may be later, or itself
            default: rows.count > 1 ? rows[Int.random(in: 1..<rows.count, using: &random)].id : .root
            }
            let kind: ItemKind = Bool.random(using: &random) ? .folder : .file
            let name = names[Int.random(in: 0..<names.count, using: &random)]
            // One name per folder, as the schema's UNIQUE (parent_id, name) keeps it.
            guard taken.insert("\(parent)/\(name)").inserted else { continue }
            rows.append(ItemRecord(id: ItemIdentifier("row-\(index)"), parentID: parent, name: name, kind: kind))
        }
        rows.shuffle(using: &random)
        return rows
    }

    @Test("the same rows and paths as resolving each parent chain, in RemotePath.precedes order", arguments: 0..<200)
    func sameAsResolvingChains(seed: Int) {
        let rows = Self.randomRows(seed: UInt64(seed))
        var byID: [ItemIdentifier: ItemRecord] = [:]
        for row in rows where row.id != .root { byID[row.id] = row }
        let expected = byID.values.compactMap { row in Self.chainPath(row.id, byID).map { ($0, row.id) } }
        let tree = RecordTree(rows).tree
        #expect(tree.records.count == expected.count)
        #expect(Set(tree.indices.map { "\(tree.paths[$0])|\(tree[$0].id)" }) == Set(expected.map { "\($0.0)|\($0.1)" }))
        for index in tree.indices.dropFirst() {
            #expect(!RemotePath.precedes(tree.paths[index], tree.paths[index - 1]),
                    "\(tree.paths[index - 1]) before \(tree.paths[index])")
        }
        for index in tree.indices {
            let parent = tree.parents[index].map { tree.paths[$0] } ?? .root
            #expect(parent == tree.paths[index].parent)
            #expect(tree[index].parentID == (tree.parents[index].map { tree[$0].id } ?? .root))
        }
    }
}
