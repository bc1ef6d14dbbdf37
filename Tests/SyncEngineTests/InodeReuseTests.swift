import SyncEngine
import Testing

/// A local move needs more than the inode number: ext4 hands a freed inode to the next
/// file made, so a deleted file and an unrelated new one can share it within one pass.
@Suite("Reconciliation: an inode number alone is not a move")
struct InodeReuseTests {
    /// How the item found at the new place differs from what was recorded.
    enum Change: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case none, size, mtime, both
        var testDescription: String { rawValue }
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var kind: ItemKind
        var change: Change
        /// Whether the planner may take it as a move.
        var isMove: Bool
        var testDescription: String { "\(kind.rawValue), \(change.rawValue) changed: \(isMove ? "move" : "delete + create")" }
    }

    /// Files, symlinks and bundles pair by inode, kind, size and mtime; folders by inode
    /// and kind (their mtime follows their entries).
    static let table: [Row] = [ItemKind.file, .symlink, .bundle].flatMap { kind in
        Change.allCases.map { Row(kind: kind, change: $0, isMove: $0 == .none) }
    } + [Change.none, .mtime].map { Row(kind: .folder, change: $0, isMove: true) }

    @Test("a renamed item is a move only when its recorded stat still holds", arguments: table)
    func pairing(_ row: Row) {
        var w = World()
        w.synced("old", row.kind, target: row.kind == .symlink ? "t" : nil)
        w.moveLocal("old", "new")
        var seen = w.local[p("new")]!
        if row.change == .size || row.change == .both { seen.size += 1; seen.stat.size += 1 }
        if row.change == .mtime || row.change == .both { seen.stat.modificationTimeNanoseconds += 7 }
        w.local[p("new")] = seen
        let plan = w.plan()
        let moves = plan.filter { if case .moveRemote = $0 { return true } else { return false } }
        #expect(moves.count == (row.isMove ? 1 : 0), "\(plan)")
        #expect(plan.contains { $0.isDeletion } == !row.isMove, "\(plan)")
        // (The plan simulator models a bundle's local side as a file.)
        if row.kind != .bundle { RenameDetectionTests.expectRuns(plan, on: w) }
    }

    @Test("an inode of a kind other than the record's is never a move")
    func otherKind() {
        var w = World()
        w.synced("old")
        let stat = w.stat("old")
        w.deleteLocal("old")
        w.local[p("new")] = LocalObservation(kind: .folder, size: 0, stat: stat)
        #expect(!w.plan().contains { if case .moveRemote = $0 { return true } else { return false } })
    }

    @Test("a file deleted locally while edited on the server, its inode reused by a new file: the edit comes back, the new file is uploaded")
    func reusedInodeAgainstRemoteEdit() {
        var w = World()
        w.synced("e.txt")
        w.synced("d", .folder)
        let freed = w.stat("e.txt").inode
        w.deleteLocal("e.txt")
        w.editRemote("e.txt", size: 12)
        w.createLocal("d/new.txt", size: 4)
        w.local[p("d/new.txt")]!.stat.inode = freed
        let plan = w.plan()
        #expect(plan == [
            .upload(p("d/new.txt"), condition: .mustNotExist, source: w.stat("d/new.txt"), item: nil),
            .download(p("e.txt"), version: w.etag("e.txt"), replacing: nil, item: w.id("e.txt")),
        ] || plan == [
            .download(p("e.txt"), version: w.etag("e.txt"), replacing: nil, item: w.id("e.txt")),
            .upload(p("d/new.txt"), condition: .mustNotExist, source: w.stat("d/new.txt"), item: nil),
        ], "\(plan)")
        RenameDetectionTests.expectRuns(plan, on: w)
    }
}
