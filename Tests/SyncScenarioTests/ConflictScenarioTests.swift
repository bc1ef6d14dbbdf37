import Foundation
import Replica
import SyncEngine
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Issue 7's matrix, row by row, with real parts: the watcher on a temp folder, the real
/// engine, and every store (the local-directory store and each private server). Each test
/// syncs a starting state, holds passes back (as `tidesync pause` does) while it changes
/// both sides, lets the loop run, and checks that every version anyone wrote is still there:
/// bytes on both sides, the conflict copy's name, the conflict row in the state DB.
///
/// Poll and rescan are an hour, so the first pass after the changes sees only the local
/// side: its writes meet the server's newer versions through their guards (412), and the
/// loop must then look at the server at once and keep both versions.
// Every row runs on every server. Each runs a live loop with a watcher, so they take
// turns through `TestSlots.liveLoops` with every other live loop of the process (they
// ran one at a time when they were fewer; on six stores that chain took minutes).
@Suite("Conflict scenarios")
struct ConflictScenarioTests {
    // MARK: Both sides changed one file

    @Test("edit here, other edit there (different bytes): conflict copy of ours, theirs under the name", arguments: Remote.withOtherServers)
    func editEdit(_ remote: Remote) async throws {
        try await scenario(remote, start: ["doc.txt": "base"]) { world in
            try world.writeOnServer("doc.txt", "theirs, longer")
            try world.write("doc.txt", "ours")
        } until: { world in world.localCopies(of: "doc.txt").count == 1 } check: { world, _ in
            try expectBothKept(world, "doc.txt", theirs: "theirs, longer", ours: "ours")
        }
    }

    @Test("edit here, edit there with the same size but other bytes: compared, then both kept", arguments: Remote.withOtherServers)
    func editEditSameSize(_ remote: Remote) async throws {
        try await scenario(remote, start: ["doc.txt": "base"]) { world in
            // Where a version is a time in seconds and a size (nginx, WsgiDAV: README,
            // compatibility), a same-size edit within the second of the last write is not a
            // new version at all: the server's edit is made in a later second there.
            if remote.versionsAreSecondsAndSize { try await world.waitPastServerSecond("doc.txt") }
            try world.writeOnServer("doc.txt", "AAAA")
            try world.write("doc.txt", "BBBB")
        } until: { world in world.localCopies(of: "doc.txt").count == 1 } check: { world, _ in
            try expectBothKept(world, "doc.txt", theirs: "AAAA", ours: "BBBB")
        }
    }

    @Test("edit here, edit there to the same bytes: no conflict, the new version is agreed", arguments: Remote.withOtherServers)
    func editEditSameBytes(_ remote: Remote) async throws {
        try await scenario(remote, start: ["doc.txt": "base"]) { world in
            try world.writeOnServer("doc.txt", "same new text")
            try world.write("doc.txt", "same new text")
        } until: { world in
            let agreed = await world.serverETagMatchesRecord("doc.txt")
            return agreed && world.localCopies(of: "doc.txt").isEmpty
        } check: { world, _ in
            #expect(world.localCopies(of: "doc.txt").isEmpty && world.serverCopies(of: "doc.txt").isEmpty)
            let conflicts = try world.database.conflicts()
            #expect(conflicts.isEmpty)
            #expect(readFile(world.local("doc.txt")) == "same new text")
            let agreed = await world.serverETagMatchesRecord("doc.txt")
            #expect(agreed, "the base version is the server's new one")
        }
    }

    @Test("edit here, deleted there: ours is created on the server again", arguments: Remote.withOtherServers)
    func editDelete(_ remote: Remote) async throws {
        try await scenario(remote, start: ["doc.txt": "base", "other.txt": "x"]) { world in
            try world.removeOnServer("doc.txt")
            try world.write("doc.txt", "ours, edited")
        } until: { world in world.serverText("doc.txt") == "ours, edited" } check: { world, _ in
            #expect(readFile(world.local("doc.txt")) == "ours, edited")
            #expect(world.localCopies(of: "doc.txt").isEmpty)
        }
    }

    @Test("deleteItem of a file changed on the server is rejected; their version comes back here", arguments: Remote.withOtherServers)
    func deleteEdit(_ remote: Remote) async throws {
        var mark = 0
        try await scenario(remote, start: ["doc.txt": "base", "other.txt": "x"]) { world in
            mark = world.accessLogLines().count
            try world.writeOnServer("doc.txt", "theirs, edited")
            #expect(unlink(world.local("doc.txt")) == 0)
        } until: { world in readFile(world.local("doc.txt")) == "theirs, edited" } check: { world, run in
            #expect(world.serverText("doc.txt") == "theirs, edited")
            #expect(run.log.contains("changed on the server since it was last synced"), "the delete was tried and rejected")
            if remote == .apache {
                // The guarded delete takes a LOCK with If-Match first on Apache (a PUT or
                // DELETE there is not checked atomically): the server refuses the LOCK, or a
                // DELETE, with 412, and answers no DELETE with success.
                let deletes = world.requests("DELETE", since: mark), locks = world.requests("LOCK", since: mark)
                #expect(deletes.allSatisfy { $0.contains("\" 412 ") } && (deletes + locks).contains { $0.contains("\" 412 ") },
                        "guarded DELETEs: \(deletes), LOCKs: \(locks)")
            }
        }
    }

    // MARK: Renames

    @Test("renamed here, edited there: the rename goes to the server, their bytes come into the renamed file", arguments: Remote.withOtherServers)
    func renameEdit(_ remote: Remote) async throws {
        try await scenario(remote, start: ["doc.txt": "base"]) { world in
            try world.writeOnServer("doc.txt", "theirs, edited")
            #expect(rename(world.local("doc.txt"), world.local("renamed.txt")) == 0)
        } until: { world in
            readFile(world.local("renamed.txt")) == "theirs, edited" && world.serverText("doc.txt") == nil
        } check: { world, _ in
            #expect(world.serverText("renamed.txt") == "theirs, edited")
            #expect(!FileManager.default.fileExists(atPath: world.local("doc.txt")))
            #expect(world.localCopies(of: "renamed.txt").isEmpty && world.localCopies(of: "doc.txt").isEmpty)
        }
    }

    @Test("edited here, renamed there: our bytes are uploaded to the renamed item", arguments: Remote.withOtherServers)
    func editRename(_ remote: Remote) async throws {
        try await scenario(remote, start: ["doc.txt": "base"]) { world in
            try world.moveOnServer("doc.txt", to: "renamed.txt")
            try world.write("doc.txt", "ours, edited")
        } until: { world in world.serverText("renamed.txt") == "ours, edited" } check: { world, _ in
            #expect(readFile(world.local("renamed.txt")) == "ours, edited")
            #expect(world.serverText("doc.txt") == nil && !FileManager.default.fileExists(atPath: world.local("doc.txt")))
        }
    }

    @Test("renamed to A here, to B there: the server's name wins, nothing lost, logged", arguments: Remote.withOtherServers)
    func renameRename(_ remote: Remote) async throws {
        try await scenario(remote, start: ["doc.txt": "base"]) { world in
            try world.moveOnServer("doc.txt", to: "theirs.txt")
            #expect(rename(world.local("doc.txt"), world.local("ours.txt")) == 0)
        } until: { world in readFile(world.local("theirs.txt")) == "base" } check: { world, run in
            #expect(!FileManager.default.fileExists(atPath: world.local("ours.txt")))
            #expect(world.serverText("ours.txt") == nil && world.serverText("doc.txt") == nil)
            #expect(run.log.contains("the server's name wins"))
        }
    }

    // MARK: Creates

    @Test("created here while the name was taken on the server by another file: create/create, both kept", arguments: Remote.withOtherServers)
    func createCreate(_ remote: Remote) async throws {
        var mark = 0
        try await scenario(remote, start: ["other.txt": "x"]) { world in
            mark = world.accessLogLines().count
            try world.writeOnServer("new.txt", "theirs, new")
            try world.write("new.txt", "ours, also new")
        } until: { world in world.localCopies(of: "new.txt").count == 1 } check: { world, _ in
            try expectBothKept(world, "new.txt", theirs: "theirs, new", ours: "ours, also new")
            if remote == .apache {
                let puts = world.requests("PUT", since: mark).filter { $0.contains("/new.txt ") }
                #expect(puts.contains { $0.contains("\" 412 ") }, "the create was guarded by If-None-Match: \(puts)")
            }
        }
    }

    @Test("two versions with identical bytes are not a conflict", arguments: Remote.withOtherServers)
    func createCreateSameBytes(_ remote: Remote) async throws {
        try await scenario(remote, start: ["other.txt": "x"]) { world in
            try world.writeOnServer("same.txt", "identical bytes")
            try world.write("same.txt", "identical bytes")
        } until: { world in try world.itemID("same.txt") != nil } check: { world, _ in
            #expect(world.localCopies(of: "same.txt").isEmpty && world.serverCopies(of: "same.txt").isEmpty)
            let conflicts = try world.database.conflicts()
            #expect(conflicts.isEmpty)
        }
    }

    // MARK: Folders

    @Test("a file added here inside a folder deleted there: the folder comes back holding it, the rest stays deleted", arguments: Remote.withOtherServers)
    func addInDeletedFolder(_ remote: Remote) async throws {
        try await scenario(remote, start: ["d/old1.txt": "1", "d/old2.txt": "2", "keep.txt": "k"]) { world in
            try world.removeOnServer("d")
            try world.write("d/new.txt", "ours, new")
        } until: { world in
            world.serverText("d/new.txt") == "ours, new" && !FileManager.default.fileExists(atPath: world.local("d/old1.txt"))
        } check: { world, _ in
            #expect(world.serverText("d/old1.txt") == nil && world.serverText("d/old2.txt") == nil)
            #expect(!FileManager.default.fileExists(atPath: world.local("d/old2.txt")))
            #expect(readFile(world.local("d/new.txt")) == "ours, new")
        }
    }

    @Test("a folder deleted here while a file was added in it there: the folder comes back with the new file", arguments: Remote.withOtherServers)
    func deleteFolderWithRemoteAddition(_ remote: Remote) async throws {
        try await scenario(remote, start: ["d/old1.txt": "1", "d/old2.txt": "2", "keep.txt": "k"]) { world in
            try world.writeOnServer("d/theirs.txt", "theirs, new")
            try FileManager.default.removeItem(atPath: world.local("d"))
        } until: { world in
            readFile(world.local("d/theirs.txt")) == "theirs, new" && world.serverText("d/old1.txt") == nil
        } check: { world, _ in
            #expect(world.serverText("d/theirs.txt") == "theirs, new")
            #expect(world.serverText("d/old2.txt") == nil)
            #expect(!FileManager.default.fileExists(atPath: world.local("d/old1.txt")))
        }
    }

    // MARK: Conflict copies are ordinary files

    @Test("editing a conflict copy never makes a copy of a copy", arguments: Remote.withOtherServers)
    func editConflictCopy(_ remote: Remote) async throws {
        try await scenario(remote, start: ["doc.txt": "base"]) { world in
            try world.writeOnServer("doc.txt", "theirs, first round")
            try world.write("doc.txt", "ours, first")
        } until: { world in world.localCopies(of: "doc.txt").count == 1 } check: { world, run in
            let copy = try expectBothKept(world, "doc.txt", theirs: "theirs, first round", ours: "ours, first")
            // An edit of the copy here is an ordinary edit.
            try world.write(copy, "ours, the copy edited")
            try await eventually("the copy's edit uploaded") { try world.synced(copy, "ours, the copy edited") }
            try await run.quiesce()
            #expect(world.localCopies(of: "doc.txt") == [copy])
            // Both sides edit the copy: its own conflict copy is named after the original.
            try await run.hold()
            try world.writeOnServer(copy, "theirs, the copy edited there")
            try world.write(copy, "ours, the copy edited again")
            run.release()
            try await eventually("the second conflict") { world.localCopies(of: "doc.txt").count == 2 }
            try await run.quiesce()
            let names = world.localCopies(of: "doc.txt")
            #expect(names.allSatisfy { ConflictName.parse($0).map { ConflictName.parse($0.baseName) == nil } ?? false },
                    "a conflict copy of a conflict copy: \(names)")
            let second = names.first { $0 != copy }!
            #expect(readFile(world.local(second)) == "ours, the copy edited again")
            #expect(world.serverText(second) == "ours, the copy edited again")
            #expect(readFile(world.local(copy)) == "theirs, the copy edited there")
            let conflicts = try world.database.conflicts()
            #expect(conflicts.count == 2)
        }
    }

    // MARK: Apache's weak-ETag second

    @Test("20 saves of one file within 2 s make no conflict copy (Apache's weak-ETag second)", arguments: Remote.withOtherServers)
    func rapidSaves(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            // A short debounce and poll, so saves and remote walks meet the weak tags.
            let run = LiveRun(world, debounce: .milliseconds(20), poll: .milliseconds(300))
            try await run.start()
            var mark = 0
            let last = "save 20" + String(repeating: "+", count: 20 % 3)
            do {
                try world.write("notes.md", "save 0")
                try await eventually("the first save") { try world.synced("notes.md", "save 0") }
                mark = world.accessLogLines().count
                for index in 1...20 {
                    // Sizes vary and repeat, as a user's saves do.
                    let text = "save \(index)" + String(repeating: "+", count: index % 3)
                    try world.write("notes.md", text)
                    if index == 10 {
                        // Halfway, the save reaches the server before the next one: two PUTs at
                        // least whatever the load (beside CPU hogs a pass could outlast all 20).
                        try await eventually("save 10 on the server") { try world.synced("notes.md", text) }
                    } else {
                        try await Task.sleep(for: .milliseconds(100))
                    }
                }
                try await eventually("the last save on the server") { try world.synced("notes.md", last) }
                try await run.quiesce()
            } catch {
                Issue.record("the loop said: \(run.log.all.suffix(30).joined(separator: "\n"))")
                await run.finish()
                throw error
            }
            await run.finish()
            #expect(world.localCopies(of: "notes.md").isEmpty, "conflict copies: \(world.localCopies(of: "notes.md"))")
            #expect(world.serverCopies(of: "notes.md").isEmpty)
            let conflicts = try world.database.conflicts()
            #expect(conflicts.isEmpty)
            #expect(!run.log.contains("conflict:"), "a conflict was raised")
            if remote == .apache {
                try await world.accessLogSettled()
                #expect(world.requests("PUT", since: mark).count >= 2, "the saves reached the server one by one")
            }
            try await world.expectAgreement()
        }
    }
}

// MARK: Helpers

extension ConflictScenarioTests {
    /// Syncs `start` (written here, uploaded by the watcher), holds passes back while
    /// `change` changes both sides, lets the loop run until `until` holds and everything is
    /// quiet, then runs `check` and checks both sides and the state DB agree.
    func scenario(_ remote: Remote, start: [String: String], change: (SyncWorld) async throws -> Void,
                  until: @escaping (SyncWorld) async throws -> Bool, check: (SyncWorld, LiveRun) async throws -> Void,
                  sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await withLiveWorld(remote) { world, run in
            for (path, text) in start { try world.write(path, text) }
            try await eventually("the start synced", sourceLocation: sourceLocation) {
                try start.allSatisfy { try world.synced($0.key, $0.value) }
            }
            try await run.quiesce(sourceLocation: sourceLocation)
            try await run.hold()
            try await change(world)
            run.release()
            try await eventually("the outcome", sourceLocation: sourceLocation) { try await until(world) }
            try await run.quiesce(sourceLocation: sourceLocation)
            try await check(world, run)
            try await run.quiesce(sourceLocation: sourceLocation)
            try await world.expectAgreement(sourceLocation: sourceLocation)
        }
    }

    /// Checks that `original` holds `theirs` on both sides and exactly one conflict copy of
    /// it holds `ours` on both sides, named for this host, listed in the state DB. Returns
    /// the copy's path.
    @discardableResult
    func expectBothKept(_ world: SyncWorld, _ original: String, theirs: String, ours: String,
                        sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        #expect(readFile(world.local(original)) == theirs, "theirs under the name here", sourceLocation: sourceLocation)
        #expect(world.serverText(original) == theirs, "theirs under the name on the server", sourceLocation: sourceLocation)
        let copies = world.localCopies(of: original)
        #expect(copies.count == 1, "one conflict copy: \(copies)", sourceLocation: sourceLocation)
        guard let copy = copies.first else { return "" }
        let parts = ConflictName.parse((copy as NSString).lastPathComponent)
        #expect(parts?.host == "testhost" && parts?.baseName == (original as NSString).lastPathComponent,
                "the copy's name: \(copy)", sourceLocation: sourceLocation)
        #expect(copy.contains(" (conflicted copy "), sourceLocation: sourceLocation)
        #expect(readFile(world.local(copy)) == ours, "ours in the copy here", sourceLocation: sourceLocation)
        #expect(world.serverText(copy) == ours, "ours in the copy on the server", sourceLocation: sourceLocation)
        let listed = try world.database.conflicts()
        #expect(listed.contains { $0.copy.description == copy && $0.original.name == (original as NSString).lastPathComponent },
                "the conflict row: \(listed)", sourceLocation: sourceLocation)
        return copy
    }
}

extension SyncWorld {
    /// The conflict copies of `relative` in its folder here (paths relative to the root).
    func localCopies(of relative: String) -> [String] { Self.copies(of: relative, below: localRoot) }

    /// The conflict copies of `relative` in its folder on the server's disk.
    func serverCopies(of relative: String) -> [String] { Self.copies(of: relative, below: remoteDisk) }

    static func copies(of relative: String, below root: String) -> [String] {
        let folder = (relative as NSString).deletingLastPathComponent
        let name = (relative as NSString).lastPathComponent
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.isEmpty ? root : root + "/" + folder)) ?? []
        return names.filter { ConflictName.parse($0)?.baseName == name }.sorted()
            .map { folder.isEmpty ? $0 : folder + "/" + $0 }
    }

    /// The names in a folder, as bytes (Swift strings would merge NFC and NFD forms).
    static func names(in folder: String) -> [[UInt8]] {
        guard let directory = opendir(folder) else { return [] }
        defer { closedir(directory) }
        var result: [[UInt8]] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if name != [0x2E], name != [0x2E, 0x2E], name != Array(".tidesync-store.lock".utf8) { result.append(name) }
        }
        return result
    }

    /// The remote version the state DB holds for `relative`.
    func recordedETag(_ relative: String) throws -> ETag? {
        Reconciler.paths(of: try database.allItems())[try RemotePath(string: relative)]?.remoteETag
    }

    /// True when the state DB's version of `relative` is the one the store lists now.
    func serverETagMatchesRecord(_ relative: String) async -> Bool {
        guard let now = try? await store.entry(at: RemotePath(string: relative)).etag,
              let recorded = try? recordedETag(relative) else { return false }
        return now.sameValue(as: recorded)
    }
}
