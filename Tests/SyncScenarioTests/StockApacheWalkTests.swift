import Foundation
import Glibc
import Replica
import StateDatabase
import SyncEngine
import Testing
import TestSupport
import WebDAV

/// Debian's Apache as it comes (`DavDepthInfinity Off`): a walk is one PROPFIND Depth 1 per
/// folder, a few at once (issue 16, item 3). Its folders are handed over in the order they
/// were found whichever answer comes first, so an idle poll's walk lists the same as the
/// last one and reads no row; a change five levels down is still found. After a save, the
/// walk is compared with the rows folder by folder, Apache's weak ETag of the second after
/// the upload included.
@Suite("a walk of a stock Apache, folder by folder",
       .enabled(if: TestApache.configured, "the private Apache is not running (TIDESYNC_TEST_DAV_URL unset); packaging/test.sh starts it"))
struct StockApacheWalkTests {
    @Test("idle polls after one that agreed read no row; a remote edit five levels down is found; a save is no change")
    func findsADeepChangeAndSkipsIdlePolls() async throws {
        let scratch = temporaryPath("tidesync-stock-walk-")
        defer { removeTree(scratch) }
        try await TestApache.withCollection(below: TestApache.url!, diskRoot: TestApache.diskRoot!) { store, disk in
            try await run(local: scratch + "/local", store: store, disk: disk, scratch: scratch)
        }
    }

    func run(local: String, store: WebDAVStore, disk: String, scratch: String) async throws {
        // Twelve folders five levels deep, and files along the way: more folders per level
        // than the walk lists at once, so answers can come in any order.
        for top in 0..<4 {
            for branch in 0..<3 {
                try writeFile(local + "/t\(top)/b\(branch)/c/d/e/deep.txt", "deep \(top) \(branch)")
                try writeFile(local + "/t\(top)/b\(branch)/near.txt", "near \(top) \(branch)")
            }
        }
        let database = try StateDatabase(path: scratch + "/state.sqlite")
        defer { try? database.close() }
        let (pass, _, state) = ScopedPassTests.countedPass(local: local, store: store, database: database)
        #expect(try await pass.run().report.succeeded > 24)

        func poll(_ label: String, reads wholeReads: Int) async throws -> PassResult {
            state.reset()
            let result = try await pass.run(.watched(SettledChanges(paths: [:]), remote: true))
            #expect(state.wholeReads == wholeReads, "\(label): \(state.wholeReads) whole reads")
            #expect(result.report.failed.isEmpty && result.report.parked == nil, "\(label): \(result.report.failed)")
            return result
        }
        // Apache's ETag of a file changed in the last second is weak, and strong after it: a
        // listing taken in that second differs from the next (beside two CPU hogs the uploads
        // and the polls fell in it). The polls begin once every ETag is strong.
        try await eventually("Apache's ETags are strong") {
            try await store.listing(below: .root).entries.allSatisfy { $0.etag?.isWeak != true }
        }
        // The rows changed since the last walk (the first pass wrote them all): compared
        // folder by folder, never every row at once.
        #expect(try await poll("first poll", reads: 0).steps == 0)
        for round in 0..<5 {
            #expect(try await poll("idle poll \(round)", reads: 0).steps == 0, "the walk listed in another order, or something else")
        }

        // Edited on the server's disk, five levels below the domain's root.
        let deep = disk + "/t2/b1/c/d/e/deep.txt"
        try writeFile(deep, "edited on the server")
        #expect(try await poll("after a remote edit", reads: 1).steps == 1)
        #expect(readFile(local + "/t2/b1/c/d/e/deep.txt") == "edited on the server")

        // A save uploaded by a watched pass: the polls after it (the first within Apache's
        // weak-ETag second, as a rule) find the server holding what the pass put there.
        try writeFile(local + "/t1/b2/near.txt", "saved here")
        let path = try RemotePath(string: "t1/b2/near.txt")
        #expect(try await pass.run(.watched(SettledChanges(paths: [path: false]), remote: false)).report.succeeded == 1)
        for round in 0..<3 {
            #expect(try await poll("poll \(round) after a save", reads: 0).steps == 0)
        }
        #expect(readFile(disk + "/t1/b2/near.txt") == "saved here")
    }
}
