import SyncEngine
import Testing

/// Issue 13, item 3: a pass that would leave one side empty while the other still holds
/// synced items holds its deletions, in a domain of any size.
@Suite("Deletion holds: an emptied side")
struct DeletionHoldTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        /// Synced files at the start (all in the root).
        var synced: Int
        var emptyLocal: Bool
        var emptyRemote: Bool
        var expected: DeletionHold.Side?
        var testDescription: String { name }
    }

    static let table: [Row] = [
        Row(name: "one synced file, the server emptied: held here", synced: 1, emptyLocal: false, emptyRemote: true, expected: .local),
        Row(name: "20 synced files, the server emptied: held here", synced: 20, emptyLocal: false, emptyRemote: true, expected: .local),
        Row(name: "20 synced files, the sync folder emptied: held on the server", synced: 20, emptyLocal: true, emptyRemote: false, expected: .remote),
        Row(name: "one synced file, the sync folder emptied: held on the server", synced: 1, emptyLocal: true, emptyRemote: false, expected: .remote),
        Row(name: "both sides emptied: nothing to delete, nothing held", synced: 5, emptyLocal: true, emptyRemote: true, expected: nil),
        Row(name: "nothing emptied: no hold", synced: 5, emptyLocal: false, emptyRemote: false, expected: nil),
        Row(name: "a first sync (nothing synced): no hold", synced: 0, emptyLocal: false, emptyRemote: true, expected: nil),
    ]

    @Test("who is held", arguments: table)
    func decision(_ row: Row) {
        var w = World()
        for n in 0..<row.synced { w.synced("f\(n).txt") }
        if row.emptyLocal { w.local = [:] }
        if row.emptyRemote { w.remote = [:] }
        if !row.emptyLocal && row.emptyRemote { w.createLocal("new-here.txt") }
        let plan = w.plan()
        let recorded = Reconciler.paths(of: w.base)
        let hold = DeletionHold.emptiedSide(plan, recorded: recorded, localIsEmpty: w.local.isEmpty, remoteIsEmpty: w.remote.isEmpty)
        #expect(hold?.side == row.expected)
        if let hold {
            #expect(hold.reason == .sideEmptied)
            #expect(hold.items == row.synced)
            // Exactly the deletions are held; the upload of a new local file is not.
            #expect(hold.steps == plan.indices.filter { plan[$0].isDeletion })
            if w.local[p("new-here.txt")] != nil { #expect(hold.steps.count < plan.count) }
        }
    }

    @Test("a deleted folder counts with everything below it")
    func folderCounts() {
        var w = World()
        w.synced("d", .folder)
        for n in 0..<3 { w.synced("d/f\(n).txt") }
        w.remote = [:]
        let plan = w.plan()
        let hold = DeletionHold.emptiedSide(plan, recorded: Reconciler.paths(of: w.base), localIsEmpty: false, remoteIsEmpty: true)
        #expect(hold == DeletionHold(reason: .sideEmptied, side: .local, items: 4, steps: [0]))
    }

    @Test("a side is emptied when none of its synced items is left, whatever is new there or could not be read")
    func emptiedFromRecords() {
        var w = World()
        w.synced("private", .folder)
        w.synced("private/a.txt")
        for n in 0..<3 { w.synced("f\(n).txt") }
        let recorded = Reconciler.paths(of: w.base)
        let unknown = UnknownSubtrees([p("private")])
        // The server was emptied but for a new file; its unlistable folder is taken as recorded.
        let server: Set<RemotePath> = [p("private"), p("private/a.txt"), p("skeleton.txt")]
        #expect(DeletionHold.emptied(recorded: recorded, unknown: unknown) { server.contains($0) })
        #expect(!DeletionHold.emptied(recorded: recorded, unknown: UnknownSubtrees()) { server.contains($0) },
                "a folder that was listed counts")
        #expect(!DeletionHold.emptied(recorded: recorded, unknown: unknown) { $0 == p("f1.txt") }, "one synced file is left")
        #expect(!DeletionHold.emptied(recorded: recorded, unknown: UnknownSubtrees([.root])) { _ in false },
                "nothing is known outside the unreadable folders")
    }

    @Test("a release covers the same hold or a smaller one, never more or the other side")
    func releaseCoverage() {
        let released = DeletionHold(reason: .sideEmptied, side: .local, items: 20, steps: [0])
        #expect(DeletionHold(reason: .sideEmptied, side: .local, items: 20, steps: [3]).isCovered(by: released))
        #expect(DeletionHold(reason: .sideEmptied, side: .local, items: 19, steps: [3]).isCovered(by: released))
        #expect(!DeletionHold(reason: .sideEmptied, side: .local, items: 21, steps: [0]).isCovered(by: released))
        #expect(!DeletionHold(reason: .sideEmptied, side: .remote, items: 20, steps: [0]).isCovered(by: released))
        #expect(!DeletionHold(reason: .massDelete, side: .local, items: 20, steps: [0]).isCovered(by: released))
    }
}

/// Issue 13, item 2: which remote the state DB describes.
@Suite("Remote identity")
struct RemoteIdentityTests {
    static let a = RemoteIdentity(location: "https://cloud.example/dav/")

    @Test("the verdict on the recorded and the current identity")
    func verdicts() {
        let withID = RemoteIdentity(location: Self.a.location, rootFileID: "42")
        #expect(RemoteIdentity.verdict(recorded: nil, current: Self.a) == .record)
        #expect(RemoteIdentity.verdict(recorded: Self.a, current: Self.a) == .same)
        let other = RemoteIdentity(location: "https://cloud.example/other/")
        #expect(RemoteIdentity.verdict(recorded: Self.a, current: other) == .changed(from: Self.a))
        #expect(RemoteIdentity.verdict(recorded: withID, current: RemoteIdentity(location: Self.a.location, rootFileID: "43"))
                == .changed(from: withID))
        #expect(RemoteIdentity.verdict(recorded: withID, current: withID) == .same)
        // A root id seen for the first time is recorded; one no longer reported says nothing.
        #expect(RemoteIdentity.verdict(recorded: Self.a, current: withID) == .record)
        #expect(RemoteIdentity.verdict(recorded: withID, current: Self.a) == .same)
    }
}
