import Foundation
import LocalStore
import Logging
import Replica
import StateDatabase
import SyncEngine
import Testing
import TestSupport

/// A full pass in a new process (the daemon's start, `run --once`) whose remote walk lists
/// what the last agreeing walk listed compares the sync folder with the rows folder by
/// folder, never reading them all at once (issue 16, item 2); whatever changed while no
/// daemon ran is still found. Counted in whole-table reads, not timed.
@Suite("a full pass in a new process compares an unchanged domain folder by folder")
struct StreamedFullPassTests {
    /// One "process": a state DB opened on the file, and a pass over it.
    struct Process {
        let database: StateDatabase
        let pass: SyncPass
        let state: ScopedPassTests.CountingState

        init(_ scratch: String, keptListingLimit: Int) throws {
            database = try StateDatabase(path: scratch + "/state.sqlite")
            (pass, _, state) = ScopedPassTests.countedPass(local: scratch + "/local", remote: scratch + "/remote", database: database,
                                                           keptListingLimit: keptListingLimit)
        }

        /// A full pass: its result, and whether it read every row at once.
        func full() async throws -> (result: PassResult, wholeReads: Int) {
            state.reset()
            let result = try await pass.run(.full)
            #expect(result.report.failed.isEmpty && result.report.parked == nil, "\(result.report.failed)")
            return (result, state.wholeReads)
        }

        func close() { try? database.close() }
    }

    /// A full pass in a new process, then, while it agrees, the passes after it until one
    /// compares folder by folder: the one that agreed noted its walk, the next one uses it.
    /// `wholeReads`: how often the first pass read every row at once (0: it compared folder
    /// by folder and looked at what differs with a watched pass).
    static func passInNewProcess(_ scratch: String, keptListingLimit: Int,
                                 twins: [[RemotePath]]? = nil) async throws -> (steps: Int, wholeReads: Int) {
        let process = try Process(scratch, keptListingLimit: keptListingLimit)
        defer { process.close() }
        let first = try await process.full()
        if let twins {
            #expect(first.result.normalisationTwins == twins && first.result.twinsScope == nil,
                    "a full pass reports every folder's twins: \(first.result.normalisationTwins)")
        }
        var passes = 1
        while try await process.full().wholeReads > 0 {
            passes += 1
            #expect(passes < 4, "no pass compared folder by folder")
            if passes >= 4 { break }
        }
        return (first.result.steps, first.wholeReads)
    }

    /// With a kept-listing limit of 1 the walk is not kept: a pass that finds a difference
    /// walks again for the whole comparison (a large domain's).
    @Test("nothing changed: no row read at once; a same-size edit, a deep new file, a delete, a rename, a remote edit and a row written elsewhere are each found",
          arguments: [20_000, 1])
    func findsWhatChangedWhileStopped(keptListingLimit: Int) async throws {
        let scratch = temporaryPath("tidesync-streamed-")
        defer { removeTree(scratch) }
        let (local, remote) = (scratch + "/local", scratch + "/remote")
        try FileManager.default.createDirectory(atPath: remote, withIntermediateDirectories: true)
        for name in ["docs/a.txt", "docs/b.txt", "top.txt", "one/two/three/four/five/deep.txt", "twins/caf\u{E9}.txt", "twins/cafe\u{301}.txt"] {
            try writeFile(local + "/" + name, name)
        }
        let setup = try Process(scratch, keptListingLimit: keptListingLimit)
        #expect(try await setup.full().result.steps > 0)
        // The rows changed since the last agreeing walk (there was none): the walk is
        // compared with them folder by folder, and so is the sync folder.
        let agreed = try await setup.full()
        #expect(agreed.result.steps == 0 && agreed.wholeReads == 0)
        let twins = agreed.result.normalisationTwins
        #expect(twins.count == 1, "the NFC and NFD names are twins: \(twins)")
        setup.close()

        // Nothing changed: the new process's first pass reads rows folder by folder only.
        let quiet = try Process(scratch, keptListingLimit: keptListingLimit)
        let unchanged = try await quiet.full()
        #expect(unchanged.result.steps == 0 && unchanged.wholeReads == 0)
        #expect(quiet.state.rows == 14, "each of the 13 rows below the root compared once, and the root's: \(quiet.state.rows)")
        #expect(unchanged.result.normalisationTwins == twins)
        quiet.close()

        // A same-size edit (a new mtime), then each other change, made while no pass ran.
        try writeFile(local + "/docs/a.txt", "docs/A.txt")
        var times = [timespec(tv_sec: 1_700_000_000, tv_nsec: 0), timespec(tv_sec: 1_700_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, local + "/docs/a.txt", &times, 0) == 0)
        #expect(try await Self.passInNewProcess(scratch, keptListingLimit: keptListingLimit, twins: twins) == (1, 0))
        #expect(readFile(remote + "/docs/a.txt") == "docs/A.txt")

        try writeFile(local + "/one/two/three/four/five/new.txt", "new")
        #expect(try await Self.passInNewProcess(scratch, keptListingLimit: keptListingLimit) == (1, 0))
        #expect(readFile(remote + "/one/two/three/four/five/new.txt") == "new")

        #expect(unlink(local + "/docs/b.txt") == 0)
        #expect(try await Self.passInNewProcess(scratch, keptListingLimit: keptListingLimit) == (1, 0))
        #expect(readFile(remote + "/docs/b.txt") == nil)

        #expect(rename(local + "/top.txt", local + "/docs/top.txt") == 0)
        #expect(try await Self.passInNewProcess(scratch, keptListingLimit: keptListingLimit) == (1, 0), "one move")
        #expect(readFile(remote + "/docs/top.txt") == "top.txt" && readFile(remote + "/top.txt") == nil)

        // A new folder with files in it, and a folder renamed: each one path to look at.
        try writeFile(local + "/fresh/inner/f.txt", "fresh")
        #expect(rename(local + "/one/two/three", local + "/one/two/third") == 0)
        let moved = try await Self.passInNewProcess(scratch, keptListingLimit: keptListingLimit)
        #expect(moved.wholeReads == 0 && moved.steps >= 3, "\(moved)")
        #expect(readFile(remote + "/fresh/inner/f.txt") == "fresh" && readFile(remote + "/one/two/third/four/five/deep.txt") != nil)
        #expect(!FileManager.default.fileExists(atPath: remote + "/one/two/three"))

        // More new files than a watched pass should look at one by one: every row at once.
        for n in 0...SyncPass.streamedChangeLimit { try writeFile(local + "/docs/n\(n).txt", "\(n)") }
        let many = try await Self.passInNewProcess(scratch, keptListingLimit: keptListingLimit)
        #expect(many.wholeReads == 1 && many.steps > SyncPass.streamedChangeLimit, "\(many.steps) steps")
        #expect(readFile(remote + "/docs/n7.txt") == "7")

        try writeFile(remote + "/one/two/third/four/five/deep.txt", "edited on the server")
        #expect(try await Self.passInNewProcess(scratch, keptListingLimit: keptListingLimit) == (1, 1), "the remote changed: every row")
        #expect(readFile(local + "/one/two/third/four/five/deep.txt") == "edited on the server")

        // A row changed by another process: the walk is as before, the rows are not, so the
        // walk is compared with them folder by folder (the server holds what they say), and
        // the sync folder too, which finds the file's stat differs: a watched pass over it
        // takes it back (the contents are the same).
        do {
            let other = try StateDatabase(path: scratch + "/state.sqlite")
            defer { try? other.close() }
            let docs = try #require(try other.item(parent: .root, name: "docs"))
            var row = try #require(try other.item(parent: docs.id, name: "a.txt"))
            row.local?.modificationTimeNanoseconds += 1
            try other.apply([.upsert(row)])
        }
        let afterHandWrite = try Process(scratch, keptListingLimit: keptListingLimit)
        #expect(try await afterHandWrite.full().wholeReads == 0)
        #expect(readFile(remote + "/docs/a.txt") == "docs/A.txt", "nothing lost")
        _ = try await afterHandWrite.full()  // agrees: its walk is kept for the next process
        afterHandWrite.close()

        // The sync folder emptied while no daemon ran: held back, as the whole comparison
        // holds an emptied side, never deleted on the server.
        for name in try FileManager.default.contentsOfDirectory(atPath: local) { removeTree(local + "/" + name) }
        let emptied = try Process(scratch, keptListingLimit: keptListingLimit)
        defer { emptied.close() }
        do {
            emptied.state.reset()
            let result = try await emptied.pass.run(.full)
            #expect(result.held != nil && emptied.state.wholeReads == 1, "held: \(String(describing: result.held))")
        }
        #expect(readFile(remote + "/docs/a.txt") == "docs/A.txt" && readFile(remote + "/docs/n7.txt") == "7", "nothing deleted on the server")
    }

    /// A pass over `local` and the local-directory remote `remote` with `exclude` patterns.
    static func pass(local: String, remote: String, database: StateDatabase, exclude: [String]) -> SyncPass {
        var logger = Logger(label: "unexclude")
        logger.logLevel = .warning
        let provider = SyncProvider(store: LocalDirectoryStore(root: remote), state: database)
        let runner = PlanRunner(provider: provider, folder: LocalFolder(root: local, bundles: .standard), transfers: 4, logger: logger)
        return SyncPass(runner: runner, scanner: LocalScanner(root: local, exclude: ExcludeList(patterns: exclude), bundles: .standard),
                        host: "testhost", massDelete: MassDeleteGuard(limit: 500), logger: logger)
    }

    /// The walk kept in the state DB agreed with the rows under the old patterns; under the
    /// new ones it must not spare the comparison (found by a review).
    @Test("a pattern removed from exclude while no daemon ran: what it hid on the server is synced at the next start")
    func unexcludedServerFileSyncs() async throws {
        let scratch = temporaryPath("tidesync-unexclude-")
        defer { removeTree(scratch) }
        let (local, remote) = (scratch + "/local", scratch + "/remote")
        try writeFile(local + "/a.txt", "a")
        try writeFile(remote + "/server.log", "only on the server")
        do {
            let database = try StateDatabase(path: scratch + "/state.sqlite")
            defer { try? database.close() }
            let first = Self.pass(local: local, remote: remote, database: database, exclude: ["*.log"])
            #expect(try await first.run(.full).steps == 1)
            #expect(try await first.run(.full).steps == 0)  // agrees: its walk is kept
            #expect(readFile(local + "/server.log") == nil)
        }
        let database = try StateDatabase(path: scratch + "/state.sqlite")
        defer { try? database.close() }
        let second = Self.pass(local: local, remote: remote, database: database, exclude: [])
        #expect(try await second.run(.full).steps == 1)
        #expect(readFile(local + "/server.log") == "only on the server")
    }
}
