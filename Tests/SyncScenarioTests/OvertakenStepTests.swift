import Foundation
import Replica
import SyncEngine
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Steps the user overtook: the sync folder changed under a running step. Found by the
/// two-client test, where a download into a folder the user had just moved backed off
/// for 10 s, then 20, 40… and the clients took minutes to agree.
@Suite("Steps the user overtook")
struct OvertakenStepTests {
    @Test("a download into a folder moved or deleted here meanwhile is decided again at once, not backed off", arguments: Remote.withOtherServers)
    func downloadIntoGoneFolder(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.writeOnServer("d/f.txt", "theirs")
            let path = try RemotePath(string: "d/f.txt")
            let report = try await world.pass.runner.run([.download(path, version: nil, replacing: nil, item: nil)],
                                                         context: PlanRunner.Context(remote: [:], recorded: [:], failures: [:]))
            #expect(report.failed.isEmpty, "backed off: \(report.failed.map(\.error))")
            #expect(report.resolved == 1)
            #expect(try world.database.pendingOperations().isEmpty, "nothing left to back off from")
            try await world.sync()
            #expect(readFile(world.local("d/f.txt")) == "theirs")
        }
    }

    @Test("a file written twice within one timestamp tick is uploaded as it ends up: its stat cannot tell the two apart", arguments: Remote.withOtherServers)
    func rewriteWithinOneTick(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            let path = try RemotePath(string: "a.txt")
            try world.write("a.txt", "version 1")
            // A modification time ahead stands for "the tick the plan was made in". Three
            // seconds ahead, so the upload waits the whole cap of `waitPastTimestamp` (2 s)
            // whatever the wall clock's fraction: the rewrite below lands within that wait.
            let tick = timespec(tv_sec: time(nil), tv_nsec: 0)
            let ahead = [timespec(tv_sec: tick.tv_sec + 3, tv_nsec: 300_000_000), timespec(tv_sec: tick.tv_sec + 3, tv_nsec: 300_000_000)]
            #expect(utimensat(AT_FDCWD, world.local("a.txt"), ahead, 0) == 0)
            let stat = try #require(LocalScanner.entry(at: world.local("a.txt"), path: path)?.stat)
            let runner = world.pass.runner
            let upload = Task {
                try await runner.run([.upload(path, condition: .mustNotExist, source: stat, item: nil)],
                                     context: PlanRunner.Context(remote: [:], recorded: [:], failures: [:]))
            }
            try await Task.sleep(for: .milliseconds(30))
            #expect(world.serverText("a.txt") == nil, "the test's premise: the upload still waits")
            // The second write of that tick: same inode, same size, same modification time.
            let fd = open(world.local("a.txt"), O_WRONLY | O_CLOEXEC)
            #expect(pwrite(fd, "version 2", 9, 0) == 9)
            close(fd)
            #expect(utimensat(AT_FDCWD, world.local("a.txt"), ahead, 0) == 0)
            #expect(LocalScanner.entry(at: world.local("a.txt"), path: path)?.stat == stat, "the test's premise")
            _ = try await upload.value
            #expect(world.serverText("a.txt") == "version 2", "the recorded stat stands for bytes the server does not have")
        }
    }

    @Test("a download temporary left in a folder that was moved while it was written is removed by the next scan; other names are not")
    func leftoverTemporary() async throws {
        try await withWorld(.localDirectory) { world in
            try world.write("d/kept.txt", "synced")
            try await world.sync()
            let leftover = "d/" + LocalFolder.temporaryPrefix + UUID().uuidString
            try world.write(leftover, "half a download")
            try world.write("d/.tidesync-part-notes", "not ours to delete")
            _ = try await world.pass.run()
            #expect(!FileManager.default.fileExists(atPath: world.local(leftover)))
            #expect(readFile(world.local("d/.tidesync-part-notes")) == "not ours to delete")
            #expect(readFile(world.local("d/kept.txt")) == "synced")
        }
    }

    @Test("a file and a bundle a crash left set aside by a delete are put back under their names (beside them when taken), and synced")
    func leftoverAsideIsPutBack() async throws {
        try await withWorld(.localDirectory) { world in
            try world.write("d/kept.txt", "synced")
            try await world.sync()
            // As a kill -9 between a delete's rename aside and its last look leaves them: the
            // file was edited just before, so it must not go as a leftover temporary.
            let file = "d/" + LocalFolder.asideName(for: "notes.txt")
            let bundle = "d/" + LocalFolder.asideName(for: "Deck.key")
            let taken = "d/" + LocalFolder.asideName(for: "kept.txt")
            try world.write(file, "edited just before the crash")
            try world.write(bundle + "/Index.xml", "the deck")
            try world.write(taken, "an older kept.txt")
            _ = try await world.pass.run()
            #expect(readFile(world.local("d/notes.txt")) == "edited just before the crash")
            #expect(readFile(world.local("d/Deck.key/Index.xml")) == "the deck")
            #expect(readFile(world.local("d/kept.txt")) == "synced", "the name's new owner was replaced")
            let names = try FileManager.default.contentsOfDirectory(atPath: world.local("d"))
            #expect(names.contains { $0.hasPrefix("kept (kept ") && $0.hasSuffix(").txt") }, "the aside item whose name was taken: \(names)")
            #expect(!names.contains { $0.hasPrefix(".tidesync-") }, "left aside: \(names)")
            try await world.sync()
            #expect(world.serverText("d/notes.txt") == "edited just before the crash")
            #expect(world.serverText("d/Deck.key/Index.xml") == "the deck")
        }
    }

    @Test("a synced file a crash left set aside by its delete is removed, as the delete's last look would have; it does not come back")
    func leftoverAsideAsSyncedIsRemoved() async throws {
        try await withWorld(.localDirectory) { world in
            try world.write("d/old.txt", "synced")
            try world.write("d/kept.txt", "synced too")
            try await world.sync()
            // Deleted on the server; here the delete renamed it aside and was killed there.
            try world.removeOnServer("d/old.txt")
            let aside = "d/" + LocalFolder.asideName(for: "old.txt")
            #expect(rename(world.local("d/old.txt"), world.local(aside)) == 0)
            _ = try await world.pass.run()
            let names = try FileManager.default.contentsOfDirectory(atPath: world.local("d"))
            #expect(names == ["kept.txt"], "the synced version came back or stayed aside: \(names)")
            try await world.sync()
            #expect(!FileManager.default.fileExists(atPath: world.onServer("d/old.txt")))
            #expect(world.serverText("d/kept.txt") == "synced too")
        }
    }

    @Test("an aside name holds the item's name, cut to fit a file name; other names are not aside names")
    func asideNames() {
        let long = String(repeating: "é", count: 120) + ".txt"  // 244 bytes
        let name = LocalFolder.asideName(for: long)
        #expect(name.utf8.count <= 255)
        #expect(LocalFolder.originalName(ofAside: name).map { long.hasPrefix($0) && !$0.isEmpty } == true)
        #expect(LocalFolder.originalName(ofAside: LocalFolder.asideName(for: "a.txt")) == "a.txt")
        #expect(!LocalFolder.isAside(".tidesync-aside-notes.txt"))
        #expect(!LocalFolder.isAside(LocalFolder.temporaryPrefix + UUID().uuidString))
    }

    @Test("a conflict copy edited right after it is made ends up on the server as edited, nothing left in error", arguments: Remote.withOtherServers)
    func conflictCopyEditedWhileSent(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.write("doc.txt", "ours")
            let path = try RemotePath(string: "doc.txt"), copy = try RemotePath(string: "doc (conflicted copy 2026-11-22 134501 testhost).txt")
            let stat = try #require(LocalScanner.entry(at: world.local("doc.txt"), path: path)?.stat)
            // The copy is edited while the step still has to upload it (the two-client test
            // left such a copy 'in error' with a 10 s backoff).
            let conflict = ConflictCopy(path: path, copy: copy, kind: .file, local: stat, item: nil, baseVersion: nil,
                                        remoteVersion: nil, detectedAt: Date())
            let runner = world.pass.runner
            let step = Task {
                try await runner.run([.conflictCopy(conflict)], context: PlanRunner.Context(remote: [:], recorded: [:], failures: [:]))
            }
            try await eventually("the copy made here") { FileManager.default.fileExists(atPath: world.local(copy.description)) }
            try world.write(copy.description, "ours, edited in the copy")
            let report = try await step.value
            #expect(report.failed.isEmpty, "left in error: \(report.failed.map(\.error))")
            try await world.sync()
            #expect(world.serverText(copy.description) == "ours, edited in the copy")
            try await world.expectAgreement()
        }
    }
}
