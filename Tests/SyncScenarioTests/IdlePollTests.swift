import Foundation
import Glibc
import Replica
import StateDatabase
import SyncEngine
import Testing
import TestSupport

/// An idle poll (the daemon's 30 s remote walk with nothing settled locally) whose walk
/// lists what the last walk agreeing with the rows listed reads no row: at 100 000 items
/// reading and indexing them was most of an idle minute's CPU (issue 16). The first poll
/// after the rows changed (a save uploaded, a download) compares the walk with them folder
/// by folder, never reading them all at once. Counted in rows. A change on the server, or
/// a row changed by hand, is still compared whole and synced.
@Suite("an idle poll that finds the remote as it was reads no row")
struct IdlePollTests {
    /// With a kept-listing limit of 1, no walk that may find the remote unchanged is kept:
    /// a remote that changed is walked again for the comparison (a large domain's polls).
    @Test("polls after one that agreed read no row; after a save, a folder at a time; a remote edit, a remote delete and a changed row are each found",
          arguments: [20_000, 1])
    func unchangedWalkReadsNoRow(keptListingLimit: Int) async throws {
        let scratch = temporaryPath("tidesync-idle-poll-")
        defer { removeTree(scratch) }
        let (local, remote) = (scratch + "/local", scratch + "/remote")
        try FileManager.default.createDirectory(atPath: remote, withIntermediateDirectories: true)
        for folder in 0..<10 {
            for file in 0..<20 { try writeFile(local + "/f\(folder)/deep/file\(file).txt", "content \(folder)-\(file)") }
        }
        // An excluded name on the server (never a row: every walk lists it as new) and a
        // date no nanosecond count holds must not stop the skip, or crash the walk.
        try writeFile(remote + "/f1/draft.txt~", "an editor's backup")
        try writeFile(remote + "/f3/scratch~/inner/notes.txt", "below an excluded folder")
        // A bundle, members two levels deep: its version is made from them.
        try writeFile(local + "/f5/Notes.rtfd/TXT.rtf", "rich text")
        try writeFile(local + "/f5/Notes.rtfd/res/img.png", "pixels")
        try writeFile(remote + "/old.txt", "from 2300")
        var stamps = [timespec(tv_sec: 10_413_792_000, tv_nsec: 0), timespec(tv_sec: 10_413_792_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, remote + "/old.txt", &stamps, 0) == 0)
        let database = try StateDatabase(path: scratch + "/state.sqlite")
        defer { try? database.close() }
        let (pass, provider, state) = ScopedPassTests.countedPass(local: local, remote: remote, database: database,
                                                                      keptListingLimit: keptListingLimit)
        #expect(try await pass.run().report.succeeded == 222, "200 files in 20 folders, old.txt (dated 2300) and a bundle")
        let total = try database.itemCount()

        func poll(_ label: String, reads: Reads) async throws -> PassResult {
            state.reset()
            let rows = try database.itemCount()
            let result = try await pass.run(.watched(SettledChanges(paths: [:]), remote: true))
            switch reads {
            case .none: #expect(state.wholeReads == 0 && state.rows <= 1, "\(label): \(state.wholeReads) whole reads, \(state.rows) rows")
            case .byFolder:
                #expect(state.wholeReads == 0 && state.rows >= rows - 1 && state.rows <= rows + 1,
                        "\(label): \(state.wholeReads) whole reads, \(state.rows) of \(rows) rows")
            case .whole: #expect(state.wholeReads == 1, "\(label): \(state.wholeReads) whole reads")
            }
            #expect(result.report.failed.isEmpty && result.report.parked == nil, "\(label): \(result.report.failed)")
            return result
        }
        // The first pass uploaded everything: the first poll compares the walk with the rows
        // folder by folder; the ones after read none.
        #expect(try await poll("first poll", reads: .byFolder).steps == 0)
        for round in 0..<3 {
            let idle = try await poll("idle poll \(round)", reads: .none)
            #expect(idle.steps == 0 && !idle.planned && idle.twinsScope == [])
        }
        // A daemon's start: its first pass is a full scan, which finds everything as recorded
        // and says so, so the first poll after it reads no row (it read them all again once).
        let restarted = ScopedPassTests.countedPass(local: local, remote: remote, database: database,
                                                                      keptListingLimit: keptListingLimit)
        #expect(try await restarted.0.run().steps == 0)
        restarted.2.reset()
        #expect(try await restarted.0.run(.watched(SettledChanges(paths: [:]), remote: true)).steps == 0)
        #expect(restarted.2.wholeReads == 0, "the first poll after the start read the rows \(restarted.2.wholeReads) time(s)")

        // A save: the watched pass uploads it and records the server's new version, so the
        // next walk lists what no walk listed; compared folder by folder, it agrees.
        try writeFile(local + "/f6/deep/file2.txt", "saved")
        let saved = try await pass.run(.watched(SettledChanges(paths: [RemotePath(string: "f6/deep/file2.txt"): false]), remote: false))
        #expect(saved.report.succeeded == 1 && readFile(remote + "/f6/deep/file2.txt") == "saved")
        #expect(try await poll("after a save", reads: .byFolder).steps == 0)
        #expect(try await poll("idle after the save", reads: .none).steps == 0)

        // An edit on the server, same size, deep down: the listing differs, so it is compared.
        try writeFile(remote + "/f7/deep/file3.txt", "CONTENT 7-3")
        #expect(try await poll("after a remote edit", reads: .whole).steps == 1)
        #expect(readFile(local + "/f7/deep/file3.txt") == "CONTENT 7-3")
        #expect(try await poll("after the download", reads: .byFolder).steps == 0, "the download changed rows: compared again")
        #expect(try await poll("idle again", reads: .none).steps == 0)

        #expect(unlink(remote + "/f2/deep/file9.txt") == 0)
        #expect(try await poll("after a remote delete", reads: .whole).steps == 1)
        #expect(readFile(local + "/f2/deep/file9.txt") == nil)
        _ = try await poll("after the delete", reads: .byFolder)

        // Inside the bundle, on the server: its version, made from its members, changed.
        try writeFile(remote + "/f5/Notes.rtfd/res/img.png", "PIXELS")
        #expect(try await poll("after a bundle member's edit", reads: .whole).steps == 1)
        #expect(readFile(local + "/f5/Notes.rtfd/res/img.png") == "PIXELS")
        _ = try await poll("after the bundle's download", reads: .byFolder)

        // A row changed without the remote changing (here by hand: the version it recorded is
        // another): the rows' generation moved, so the same listing is compared with them.
        _ = try await poll("idle before the row change", reads: .none)
        let id = try #require(try provider.itemID(at: RemotePath(string: "f4/deep/file0.txt")))
        var row = try #require(try database.item(id))
        row.remoteETag = ETag(value: "not-the-servers")
        try database.apply([.upsert(row)])
        let compared = try await poll("after a row change", reads: .whole)
        #expect(compared.steps == 1, "the row's version differs from the listing's: looked at")
        #expect(try database.item(id)?.remoteETag?.value != "not-the-servers")
        #expect(readFile(local + "/f4/deep/file0.txt") == "content 4-0" && readFile(remote + "/f4/deep/file0.txt") == "content 4-0")
        #expect(try database.itemCount() == total - 1)
    }

    /// A change on the server the first poll after a save meets: the rows moved (the save's
    /// upload), so that poll's walk is compared with them folder by folder, and what changed
    /// there must make it compare every row and sync it, never pass for agreeing.
    enum ServerChange: String, CaseIterable, CustomTestStringConvertible {
        case newFile, newFolder, lastFileDeleted, bundleMemberEdited, fileBecameFolder, symlinkRetargeted
        case bundleSwapLeftover, excludedBackupAppeared
        var testDescription: String { rawValue }

        /// Makes the change in the local-directory store `remote`; returns what the poll
        /// reads, and checks `local` afterwards.
        func make(in remote: String) throws -> (reads: Reads, steps: Int, check: (String) -> Bool) {
            switch self {
            case .newFile:
                try writeFile(remote + "/a/new.txt", "new")
                return (.whole, 1, { readFile($0 + "/a/new.txt") == "new" })
            case .newFolder:
                try writeFile(remote + "/fresh/inner.txt", "inner")
                return (.whole, 2, { readFile($0 + "/fresh/inner.txt") == "inner" })
            case .lastFileDeleted:  // its folder, now empty, is never handed over: the rows' count tells
                #expect(unlink(remote + "/b/only.txt") == 0)
                return (.whole, 1, { readFile($0 + "/b/only.txt") == nil })
            case .bundleMemberEdited:
                try writeFile(remote + "/c/Notes.rtfd/res/img.png", "PIXELS")
                return (.whole, 1, { readFile($0 + "/c/Notes.rtfd/res/img.png") == "PIXELS" })
            case .fileBecameFolder:
                #expect(unlink(remote + "/d/file.txt") == 0)
                try writeFile(remote + "/d/file.txt/x.txt", "x")
                return (.whole, 3, { readFile($0 + "/d/file.txt/x.txt") == "x" })
            case .symlinkRetargeted:
                #expect(unlink(remote + "/e/link") == 0 && symlink("two.txt", remote + "/e/link") == 0)
                return (.whole, 1, { (try? FileManager.default.destinationOfSymbolicLink(atPath: $0 + "/e/link")) == "two.txt" })
            case .bundleSwapLeftover:  // another client between the two moves of a swap: taken as unchanged
                try writeFile(remote + "/c/\(BundleManifest.scratchPrefix)bundle-1234\(BundleManifest.asideSuffix)/TXT.rtf", "old")
                return (.whole, 0, { readFile($0 + "/c/Notes.rtfd/TXT.rtf") == "rich text" })
            case .excludedBackupAppeared:  // never synced: the walk still agrees
                try writeFile(remote + "/a/one.txt~", "backup")
                return (.byFolder, 0, { readFile($0 + "/a/one.txt~") == nil })
            }
        }
    }

    @Test("after a save, a change on the server is compared with every row and synced", arguments: ServerChange.allCases)
    func serverChangeAfterSave(_ change: ServerChange) async throws {
        let scratch = temporaryPath("tidesync-poll-after-save-")
        defer { removeTree(scratch) }
        let (local, remote) = (scratch + "/local", scratch + "/remote")
        try FileManager.default.createDirectory(atPath: remote, withIntermediateDirectories: true)
        for (name, text) in [("a/one.txt", "one"), ("b/only.txt", "only"), ("c/Notes.rtfd/TXT.rtf", "rich text"),
                             ("c/Notes.rtfd/res/img.png", "pixels"), ("d/file.txt", "file"), ("e/two.txt", "two"), ("top.txt", "top")] {
            try writeFile(local + "/" + name, text)
        }
        #expect(symlink("one.txt", local + "/e/link") == 0)
        let database = try StateDatabase(path: scratch + "/state.sqlite")
        defer { try? database.close() }
        let (pass, _, state) = ScopedPassTests.countedPass(local: local, remote: remote, database: database)
        let poll = PassScope.watched(SettledChanges(), remote: true)
        #expect(try await pass.run().report.succeeded == 12)
        #expect(try await pass.run(poll).steps == 0)

        try writeFile(local + "/top.txt", "saved")
        let saved = try await pass.run(.watched(SettledChanges(paths: [RemotePath(string: "top.txt"): false]), remote: false))
        #expect(saved.report.succeeded == 1 && readFile(remote + "/top.txt") == "saved")
        let (reads, steps, check) = try change.make(in: remote)
        state.reset()
        let result = try await pass.run(poll)
        #expect(result.report.failed.isEmpty, "\(result.report.failed)")
        #expect(result.steps == steps, "\(result.steps) steps")
        #expect(state.wholeReads == (reads == .whole ? 1 : 0), "\(state.wholeReads) whole reads")
        // A step whose guard found the server still changing is left to the next pass, as
        // the daemon's follow-up does at once.
        let writers = { OpenWriters.describe(at: local + "/d/file.txt") ?? "none" }
        let converges = { () async throws in
            try await eventually("the local side has the server's change: \(result.report); writers of d/file.txt: \(writers())") {
                if check(local) { return true }
                let next = try await pass.run(poll)
                #expect(next.report.failed.isEmpty, "\(next.report.failed)")
                return check(local)
            }
        }
        guard change == .fileBecameFolder else { return try await converges() }
        // Seen in 2 of 3 full-suite runs, never alone (6 of 6 beside a CPU hog): the local
        // file's deletion is refused ("resolved 1, skipped 2") and its retries for 120 s
        // too; nothing is lost (the file stays here, the folder there). Not understood yet.
        await withKnownIssue("a server-side file -> folder flip stays unsynced under the full suite", isIntermittent: true) {
            try await converges()
        }
    }

    /// The same kind flip made here: a file replaced by a folder of its name, and a folder
    /// by a file. The deletion on the server and the item made in its place are one pass
    /// (the steps waited for each other, and nothing ran, pass after pass).
    @Test("a file replaced by a folder of its name, and a folder by a file, sync in one pass each way")
    func kindFlips() async throws {
        let scratch = temporaryPath("tidesync-kind-flip-")
        defer { removeTree(scratch) }
        let (local, remote) = (scratch + "/local", scratch + "/remote")
        try FileManager.default.createDirectory(atPath: remote, withIntermediateDirectories: true)
        try writeFile(local + "/d/file.txt", "file")
        try writeFile(local + "/e/folder/inner.txt", "inner")
        let database = try StateDatabase(path: scratch + "/state.sqlite")
        defer { try? database.close() }
        let (pass, _, _) = ScopedPassTests.countedPass(local: local, remote: remote, database: database)
        #expect(try await pass.run().report.succeeded == 5)
        #expect(unlink(local + "/d/file.txt") == 0)
        try writeFile(local + "/d/file.txt/x.txt", "x")
        removeTree(local + "/e/folder")
        try writeFile(local + "/e/folder", "now a file")
        let flipped = try await pass.run()
        #expect(flipped.report.failed.isEmpty && flipped.report.skipped == 0, "\(flipped.report)")
        #expect(readFile(remote + "/d/file.txt/x.txt") == "x" && readFile(remote + "/e/folder") == "now a file")
        #expect(try await pass.run().steps == 0)
    }

    /// What a poll reads: no row (its walk listed what the last agreeing one did), each row
    /// once, folder by folder, or every row at once (the whole comparison).
    enum Reads { case none, byFolder, whole }
}
