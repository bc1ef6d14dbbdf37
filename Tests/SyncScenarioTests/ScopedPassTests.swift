import Foundation
import LocalStore
import Logging
import Replica
import StateDatabase
import Synchronization
import SyncEngine
import Testing
import TestSupport

/// A watched pass that does not walk the remote (the watcher settled some paths) reads the
/// state DB's rows around those paths only: its cost follows the change, not the domain
/// (issue 16). Counted in rows, not timed.
@Suite("a watched pass reads the rows around what changed")
struct ScopedPassTests {
    /// The state DB, counting the item rows each read returns and the whole-table reads.
    final class CountingState: StateStore {
        let inner: StateDatabase
        private let counts = Mutex((rows: 0, wholeReads: 0))
        var rows: Int { counts.withLock { $0.rows } }
        var wholeReads: Int { counts.withLock { $0.wholeReads } }

        init(_ inner: StateDatabase) { self.inner = inner }

        func reset() { counts.withLock { $0 = (0, 0) } }
        private func counted(_ rows: [ItemRecord]) -> [ItemRecord] { counts.withLock { $0.rows += rows.count }; return rows }
        private func counted(_ row: ItemRecord?) -> ItemRecord? { counts.withLock { $0.rows += row == nil ? 0 : 1 }; return row }

        func item(_ id: ItemIdentifier) throws(ProviderError) -> ItemRecord? { counted(try inner.item(id)) }
        func item(parent: ItemIdentifier, name: String) throws(ProviderError) -> ItemRecord? { counted(try inner.item(parent: parent, name: name)) }
        func children(of parent: ItemIdentifier) throws(ProviderError) -> [ItemRecord] { counted(try inner.children(of: parent)) }
        func allItems() throws(ProviderError) -> [ItemRecord] {
            counts.withLock { $0.wholeReads += 1 }
            return counted(try inner.allItems())
        }
        func itemCount() throws(ProviderError) -> Int { try inner.itemCount() }
        func itemsGeneration() -> Int64? { inner.itemsGeneration() }
        func matchedWalk() throws(ProviderError) -> StoredMatchedWalk? { try inner.matchedWalk() }
        func recordMatchedWalk(_ walk: StoredMatchedWalk) throws(ProviderError) { try inner.recordMatchedWalk(walk) }
        func item(localInode: UInt64) throws(ProviderError) -> ItemRecord? { counted(try inner.item(localInode: localInode)) }
        func item(remoteFileID: String) throws(ProviderError) -> ItemRecord? { counted(try inner.item(remoteFileID: remoteFileID)) }
        func syncAnchor() throws(ProviderError) -> SyncAnchor? { try inner.syncAnchor() }
        func remoteIdentity() throws(ProviderError) -> RemoteIdentity? { try inner.remoteIdentity() }
        func hydratedRanges(of id: ItemIdentifier) throws(ProviderError) -> (ranges: RangeSet, version: ETag?) { try inner.hydratedRanges(of: id) }
        func bundleMembers(of id: ItemIdentifier) throws(ProviderError) -> [BundleMember] { try inner.bundleMembers(of: id) }
        func pendingOperations() throws(ProviderError) -> [PendingOperation] { try inner.pendingOperations() }
        func unreadableFolders() throws(ProviderError) -> [UnreadableFolder] { try inner.unreadableFolders() }
        func heldDeletions() throws(ProviderError) -> DeletionHold.Summary? { try inner.heldDeletions() }
        func recordHeldDeletions(_ held: DeletionHold.Summary?) throws(ProviderError) { try inner.recordHeldDeletions(held) }
        func journal(_ operation: PendingOperation) throws(ProviderError) -> Int64 { try inner.journal(operation) }
        func journal(_ operations: [PendingOperation]) throws(ProviderError) -> [Int64] { try inner.journal(operations) }
        func apply(_ changes: [StateChange]) throws(ProviderError) { try inner.apply(changes) }
        func recordUnreadableFolders(_ folders: [UnreadableFolder]) throws(ProviderError) { try inner.recordUnreadableFolders(folders) }
    }

    /// A pass between `local` and the local-directory remote `remote` whose state DB reads
    /// are counted (warnings only in the log).
    static func countedPass(local: String, remote: String, database: StateDatabase, keptListingLimit: Int = 20_000)
        -> (pass: SyncPass, provider: SyncProvider, state: CountingState) {
        countedPass(local: local, store: LocalDirectoryStore(root: remote), database: database, keptListingLimit: keptListingLimit)
    }

    /// The same over any remote store.
    static func countedPass(local: String, store: any RemoteStore, database: StateDatabase, keptListingLimit: Int = 20_000)
        -> (pass: SyncPass, provider: SyncProvider, state: CountingState) {
        let state = CountingState(database)
        var logger = Logger(label: "counted-pass")
        logger.logLevel = .warning
        let provider = SyncProvider(store: store, state: state, keptListingLimit: keptListingLimit)
        let runner = PlanRunner(provider: provider, folder: LocalFolder(root: local, bundles: .standard), transfers: 4, logger: logger)
        let pass = SyncPass(runner: runner, scanner: LocalScanner(root: local, exclude: ExcludeList(patterns: ExcludeList.defaultPatterns), bundles: .standard),
                            host: "testhost", massDelete: MassDeleteGuard(limit: 500), logger: logger)
        return (pass, provider, state)
    }

    /// Rows for `folders` × `files` synced files below `bulk/` that no pass here looks at
    /// (nothing of them is on disk: a pass that read them would plan their deletion).
    static func bulkRows(folders: Int, files: Int) -> [StateChange] {
        var rows = [StateChange.upsert(ItemRecord(id: ItemIdentifier("bulk"), parentID: .root, name: "bulk", kind: .folder,
                                                  local: LocalStat(inode: 1 << 40, size: 0, modificationTimeNanoseconds: 1)))]
        for folder in 0..<folders {
            let folderID = ItemIdentifier("bulk-\(folder)")
            rows.append(.upsert(ItemRecord(id: folderID, parentID: ItemIdentifier("bulk"), name: "f\(folder)", kind: .folder,
                                           local: LocalStat(inode: (1 << 40) + UInt64(folder + 1) * 1000, size: 0, modificationTimeNanoseconds: 1))))
            for file in 0..<files {
                rows.append(.upsert(ItemRecord(id: ItemIdentifier("bulk-\(folder)-\(file)"), parentID: folderID, name: "file\(file).txt",
                                               kind: .file, size: 1, remoteETag: ETag(value: "e\(folder)-\(file)"),
                                               local: LocalStat(inode: (1 << 40) + UInt64(folder + 1) * 1000 + UInt64(file + 1),
                                                                size: 1, modificationTimeNanoseconds: 1))))
            }
        }
        return rows
    }

    @Test("an edit, a new file, a folder renamed and a file deleted in a 20 000-row domain: each pass reads a few rows, none reads them all")
    func readsAroundTheChange() async throws {
        let scratch = temporaryPath("tidesync-scoped-")
        defer { removeTree(scratch) }
        let (local, remote) = (scratch + "/local", scratch + "/remote")
        try FileManager.default.createDirectory(atPath: remote, withIntermediateDirectories: true)
        for name in ["docs/a.txt", "docs/b.txt", "top.txt", "old/deep/c.txt"] { try writeFile(local + "/" + name, name) }
        let database = try StateDatabase(path: scratch + "/state.sqlite")
        defer { try? database.close() }
        let (pass, _, state) = Self.countedPass(local: local, remote: remote, database: database)
        #expect(try await pass.run().report.succeeded == 7)
        try database.apply(Self.bulkRows(folders: 200, files: 100))
        #expect(try database.itemCount() > 20_000)

        func watched(_ paths: [String: Bool]) async throws -> PassResult {
            // Closed here, but a child another test spawned just then may hold a copy of a
            // written file's descriptor until it runs exec (tens of milliseconds beside two
            // CPU hogs): the pass would hold the file back as open for writing.
            let folder = LocalFolder(root: local)
            for path in paths.keys {
                try await eventually("no process holds \(path) open for writing") { !folder.isOpenForWriting(try RemotePath(string: path)) }
            }
            state.reset()
            var settled: [RemotePath: Bool] = [:]
            for (path, subtree) in paths { settled[try RemotePath(string: path)] = subtree }
            let result = try await pass.run(.watched(SettledChanges(paths: settled), remote: false))
            #expect(state.wholeReads == 0, "a watched pass read every row")
            #expect(state.rows < 40, "\(state.rows) rows read for \(paths.keys.sorted())")
            #expect(result.report.failed.isEmpty && result.report.parked == nil, "\(result.report.failed) \(String(describing: result.report.parked))")
            return result
        }
        try writeFile(local + "/docs/a.txt", "edited")
        try writeFile(local + "/docs/new.txt", "new")
        #expect(try await watched(["docs/a.txt": false, "docs/new.txt": false]).steps == 2)
        #expect(readFile(remote + "/docs/a.txt") == "edited" && readFile(remote + "/docs/new.txt") == "new")

        #expect(rename(local + "/old", local + "/moved") == 0)
        let move = try await watched(["old": false, "moved": true])
        #expect(move.steps == 1, "one move")
        #expect(readFile(remote + "/moved/deep/c.txt") == "old/deep/c.txt" && readFile(remote + "/old/deep/c.txt") == nil)

        // Only the new name settled (its old one's event lost): the inode still pairs them.
        #expect(rename(local + "/top.txt", local + "/docs/top.txt") == 0)
        let inodeMove = try await watched(["docs/top.txt": false])
        #expect(inodeMove.steps == 1, "one move, found by inode")
        #expect(readFile(remote + "/docs/top.txt") == "top.txt")

        #expect(unlink(local + "/docs/b.txt") == 0)
        #expect(try await watched(["docs/b.txt": false]).steps == 1)
        #expect(readFile(remote + "/docs/b.txt") == nil)
        #expect(FileManager.default.fileExists(atPath: remote + "/docs/a.txt"), "nothing else deleted")
    }
}
