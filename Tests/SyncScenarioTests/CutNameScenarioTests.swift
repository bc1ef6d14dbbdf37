import Foundation
@testable import Replica
import Synchronization
import SyncEngine
import Testing
import TestSupport
@testable import WebDAV

#if canImport(Glibc)
import Glibc
#endif

/// Names with "?" and ";" through the whole engine, on every server. WsgiDAV takes such a
/// character in a MOVE's destination for the end of the name: there a file is renamed by a
/// copy, a folder by copies of its tree (`WebDAVStore+FolderRename.swift`), and writes below
/// such a folder are made in place (they landed at the cut name).
@Suite("Names a server may cut in a MOVE's destination")
struct CutNameScenarioTests {
    @Test("a file renamed to a name with \"?\" and edited in a folder named with \"?\": both reach the server, nothing lands elsewhere",
          arguments: Remote.withOtherServers)
    func renamedAndEdited(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.write("notes/draft.txt", "the draft")
            try world.write("why?/answer.txt", "first answer")
            try await world.sync()
            #expect(world.serverText("why?/answer.txt") == "first answer")
            #expect(rename(world.local("notes/draft.txt"), world.local("notes/final?.txt")) == 0)
            try world.write("why?/answer.txt", "second answer, longer")
            try await world.sync()
            #expect(world.serverText("notes/final?.txt") == "the draft")
            #expect(world.serverText("why?/answer.txt") == "second answer, longer")
            #expect(!FileManager.default.fileExists(atPath: world.onServer("notes/final")), "the rename landed at the cut name")
            #expect(!FileManager.default.fileExists(atPath: world.onServer("why")), "a write landed at the cut name")
            try await world.expectAgreement()
            #expect(try await world.pass.run().steps == 0)
        }
    }

    /// The folder `plain` (three files, a subfolder), synced.
    static func syncedTree(_ world: SyncWorld) async throws {
        try world.write("plain/a.txt", "alpha")
        try world.write("plain/b.txt", "bravo")
        try world.write("plain/sub/c.txt", "charlie")
        try await world.sync()
    }

    @Test("a folder with files and a subfolder renamed to a name with \"?\": moved whole; a file another client changes mid-way is kept beside",
          arguments: Remote.withOtherServers)
    func folderRenamed(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try await Self.syncedTree(world)
            // Where the rename is a copy (WsgiDAV), another client changes a file after it was
            // copied and before the source is deleted.
            let changed = world.onServer("plain/sub/c.txt")
            let hooked = Mutex(false)
            (world.store as? WebDAVStore)?.treeCopied.withLock { hook in
                hook = { _ in
                    try? writeFile(changed, "charlie, changed on the server mid-way")
                    hooked.withLock { $0 = true }
                }
            }
            #expect(rename(world.local("plain"), world.local("why?")) == 0)
            try await world.sync()
            #expect(hooked.withLock { $0 } == (remote == .wsgidav), "the tree was copied only where a MOVE would land elsewhere")
            for (name, text) in ["a.txt": "alpha", "b.txt": "bravo", "sub/c.txt": "charlie"] {
                #expect(world.serverText("why?/\(name)") == text, "why?/\(name)")
                #expect(readFile(world.local("why?/\(name)")) == text, "why?/\(name)")
            }
            #expect(!FileManager.default.fileExists(atPath: world.onServer("why")), "the rename landed at the cut name")
            if remote == .wsgidav {
                #expect(world.serverText("plain/sub/c.txt") == "charlie, changed on the server mid-way")
                #expect(readFile(world.local("plain/sub/c.txt")) == "charlie, changed on the server mid-way")
                #expect(!FileManager.default.fileExists(atPath: world.onServer("plain/a.txt")))
            } else {
                #expect(!FileManager.default.fileExists(atPath: world.onServer("plain")))
            }
            try await world.expectAgreement()
            #expect(try await world.pass.run().steps == 0)
        }
    }

    /// A crash half-way through the copies leaves the tree whole at its old name and a part
    /// of it at the new one; half-way through the deletes, the tree whole at the new name and
    /// a part of it at the old one. The state DB still has it at the old name (a step is
    /// recorded when it is over) and the journal an entry of the move never attempted. The
    /// server and the journal are put in that state by hand; the next start finishes the
    /// rename (`PlanRunner.finishInterruptedFolderMoves`).
    @Test("a folder rename by copies cut short by a crash is finished by the next start, nothing lost",
          arguments: Remote.withOtherServers.filter { $0 == .wsgidav }, [true, false])
    func crashHalfway(_ remote: Remote, whileCopying: Bool) async throws {
        try await withWorld(remote) { world in
            try await Self.syncedTree(world)
            #expect(rename(world.local("plain"), world.local("why?")) == 0)
            let item = try #require(try world.provider.itemID(at: RemotePath(["plain"])))
            let entry = PlanRunner.JournalEntry(step: SyncAction.moveRemoteStep, path: try RemotePath(["why?"]))
            _ = try world.provider.journal([PendingOperation(itemID: item, kind: SyncAction.moveRemoteStep,
                                                             payload: try JSONEncoder().encode(entry), createdAt: Date())])
            try world.makeServerFolder("why?")
            try world.writeOnServer("why?/a.txt", "alpha")
            if !whileCopying {
                try world.writeOnServer("why?/b.txt", "bravo")
                try world.writeOnServer("why?/sub/c.txt", "charlie")
                try world.removeOnServer("plain/a.txt")
                try world.removeOnServer("plain/b.txt")
            }
            try await world.sync()
            let expected = ["why?", "why?/a.txt", "why?/b.txt", "why?/sub", "why?/sub/c.txt"]
            #expect(SyncWorld.tree(world.localRoot).keys.sorted() == expected, "a conflict copy or the old folder is left")
            for (name, text) in ["a.txt": "alpha", "b.txt": "bravo", "sub/c.txt": "charlie"] {
                #expect(world.serverText("why?/\(name)") == text, "why?/\(name)")
                #expect(readFile(world.local("why?/\(name)")) == text, "why?/\(name)")
            }
            #expect(!FileManager.default.fileExists(atPath: world.onServer("plain")), "the old folder is left on the server")
            try await world.expectAgreement()
            #expect(try await world.pass.run().steps == 0)
        }
    }

    @Test("a bundle, or a folder holding one, renamed to a name with \"?\" where a MOVE would land elsewhere: in error with why, never half-moved",
          arguments: Remote.withOtherServers.filter { $0 == .wsgidav })
    func bundleRefused(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.write("plain/Deck.key/index.xml", "slides")
            try world.write("Solo.key/index.xml", "solo")
            try await world.sync()
            #expect(rename(world.local("plain"), world.local("why?")) == 0)
            #expect(rename(world.local("Solo.key"), world.local("solo?.key")) == 0)
            let failed = try await world.pass.run().report.failed.map { "\($0.error)" }
            #expect(!failed.isEmpty && failed.allSatisfy { $0.contains("rename it without those characters") }, "\(failed)")
            #expect(world.serverText("plain/Deck.key/index.xml") == "slides")
            #expect(world.serverText("Solo.key/index.xml") == "solo")
            for name in ["why?", "why", "solo?.key", "solo"] {
                #expect(!FileManager.default.fileExists(atPath: world.onServer(name)), "\(name) on the server")
            }
            #expect(readFile(world.local("why?/Deck.key/index.xml")) == "slides")
            #expect(readFile(world.local("solo?.key/index.xml")) == "solo")
        }
    }
}
