import Foundation
import Replica
import SyncEngine
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Change a side, sync, both sides and the DB agree — against every available store.
@Suite("sync scenarios")
struct SyncScenarioTests {
    /// A name of the longest length `remote` stores (255 bytes, ext4's limit, on most).
    static func longName(_ remote: Remote) -> String { String(repeating: "n", count: remote.longestName - 4) + ".txt" }

    @Test("initial upload of a nested tree with awkward names, an empty file and a symlink", arguments: Remote.withOtherServers)
    func initialUpload(remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.write("a/b/c/deep.txt", "deep")
            try world.write("a/top.txt", "top")
            try world.write("with space/ümlaut café.txt", "names")
            try world.write("a/b/" + Self.longName(remote), "long")
            try world.write("empty", "")
            try FileManager.default.createDirectory(atPath: world.local("empty folder"), withIntermediateDirectories: true)
            if remote.storesSymlinks { #expect(symlink("../outside/target", world.local("a/link")) == 0) }
            try await world.sync()
            try await world.expectAgreement()
            #expect(readFile(world.onServer("a/b/c/deep.txt")) == "deep")
            #expect(try await world.pass.run().steps == 0)
        }
    }

    @Test("initial download of a nested tree made on the server", arguments: Remote.withOtherServers)
    func initialDownload(remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.writeOnServer("x/y/z/deep.txt", "from the server")
            try world.writeOnServer("name with # and %.txt", "odd")
            try world.writeOnServer("naïve/" + Self.longName(remote), "long")
            try world.makeServerFolder("empty")
            try await world.sync()
            try await world.expectAgreement()
            #expect(readFile(world.local("x/y/z/deep.txt")) == "from the server")
        }
    }

    @Test("edits go both ways, same-size in-place edits too", arguments: Remote.withOtherServers)
    func edits(remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.write("doc.txt", "version 1")
            try world.write("same.txt", "AAAA")
            try world.writeOnServer("theirs.txt", "server 1")
            try await world.sync()
            try world.write("doc.txt", "version 2, longer")
            // In place, same size: only the bytes and the mtime change.
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: world.local("same.txt")))
            try handle.write(contentsOf: Data("BBBB".utf8))
            try handle.close()
            try world.writeOnServer("theirs.txt", "server 2")  // same size as before
            try await world.sync()
            #expect(readFile(world.onServer("doc.txt")) == "version 2, longer")
            #expect(readFile(world.onServer("same.txt")) == "BBBB")
            // nginx (version made from time and size) and WsgiDAV (ETag of inode, time in
            // seconds and size) give a same-size rewrite within the second the old version's
            // version: it is not seen (README, compatibility).
            try await withKnownIssue("a same-size server edit within one second keeps its version", isIntermittent: true) {
                try await world.expectAgreement()
                #expect(readFile(world.local("theirs.txt")) == "server 2")
            } when: { remote == .nginx || remote == .wsgidav }
        }
    }

    @Test("deletes go both ways, files and folders", arguments: Remote.withOtherServers)
    func deletes(remote: Remote) async throws {
        try await withWorld(remote) { world in
            for name in ["l.txt", "r.txt", "lf/1.txt", "lf/sub/2.txt", "rf/1.txt"] { try world.write(name, name) }
            try await world.sync()
            try FileManager.default.removeItem(atPath: world.local("l.txt"))
            try FileManager.default.removeItem(atPath: world.local("lf"))
            try world.removeOnServer("r.txt")
            try world.removeOnServer("rf")
            try await world.sync()
            try await world.expectAgreement()
            #expect(SyncWorld.tree(world.localRoot).isEmpty)
        }
    }

    @Test("a local rename of a file and of a folder of 500 files is one move on the server", arguments: Remote.withOtherServers)
    func localRenames(remote: Remote) async throws {
        try await withWorld(remote, transfers: 8) { world in
            for index in 0..<500 { try world.write("big/f\(index).txt", "file \(index)") }
            try world.write("one.txt", "one")
            try await world.sync()
            let folderInode = world.serverInode("big"), fileInode = world.serverInode("big/f7.txt")
            let oneInode = world.serverInode("one.txt")
            #expect(rename(world.local("big"), world.local("renamed big")) == 0)
            try FileManager.default.createDirectory(atPath: world.local("sub"), withIntermediateDirectories: true)
            #expect(rename(world.local("one.txt"), world.local("sub/two.txt")) == 0)
            let passes = try await world.sync()
            try await world.expectAgreement()
            // A move keeps the server's inode; a re-upload would make new ones.
            #expect(world.serverInode("renamed big") == folderInode)
            #expect(world.serverInode("renamed big/f7.txt") == fileInode)
            #expect(world.serverInode("sub/two.txt") == oneInode)
            #expect(passes.first.map { $0.steps } ?? 0 <= 3)
        }
    }

    @Test("a remote rename of a folder of 500 files is one local move", arguments: Remote.withOtherServers)
    func remoteRenames(remote: Remote) async throws {
        try await withWorld(remote, transfers: 8) { world in
            for index in 0..<500 { try world.writeOnServer("box/f\(index).txt", "file \(index)") }
            try await world.sync()
            let inode = world.localInode("box/f42.txt")
            try world.moveOnServer("box", to: "moved box")
            let passes = try await world.sync()
            try await world.expectAgreement()
            // nginx lists no ETag and no file id: a version is last-modified + size, which
            // 500 files written in one second share, so nothing tells which file went where.
            // There the folder comes down again (README, compatibility).
            guard remote != .nginx else { return }
            #expect(world.localInode("moved box/f42.txt") == inode)
            #expect(passes.first.map { $0.steps } ?? 0 == 1)
        }
    }

    @Test("a change deep in the server's tree is found (no pruning by folder ETags)", arguments: Remote.withOtherServers)
    func deepServerChange(remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.write("a/b/c/d/e.txt", "old")
            try world.write("a/b/c/d/other.txt", "x")
            try await world.sync()
            try await Task.sleep(for: .milliseconds(1100))
            try world.writeOnServer("a/b/c/d/e.txt", "new!")
            try world.writeOnServer("a/b/c/d/added.txt", "added")
            try await world.sync()
            try await world.expectAgreement()
            #expect(readFile(world.local("a/b/c/d/e.txt")) == "new!")
        }
    }

    @Test("changes made while no pass ran are found by the next one", arguments: Remote.withOtherServers)
    func offlineChanges(remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.write("keep.txt", "1")
            try world.write("gone.txt", "1")
            try await world.sync()
            try world.write("keep.txt", "22")
            try world.write("new/one.txt", "new")
            try FileManager.default.removeItem(atPath: world.local("gone.txt"))
            try world.writeOnServer("server new.txt", "s")
            try await world.sync()
            try await world.expectAgreement()
            #expect(readFile(world.onServer("keep.txt")) == "22")
            #expect(readFile(world.onServer("gone.txt")) == nil)
        }
    }

    @Test("a symlink is synced as a symlink and never followed out of the root",
          arguments: Remote.withOtherServers.filter(\.storesSymlinks))
    func symlinks(remote: Remote) async throws {
        try await withWorld(remote) { world in
            let outside = world.scratch + "/outside"
            try writeFile(outside + "/secret.txt", "never synced")
            #expect(symlink(outside, world.local("escape")) == 0)
            #expect(symlink("/etc/hostname", world.local("abs")) == 0)
            try await world.sync()
            try await world.expectAgreement()
            let entries = try await world.store.descendants(of: .root)
            #expect(entries.count == 2)
            #expect(entries.allSatisfy { $0.kind == .symlink })
            // A second client gets the links back as links.
            try FileManager.default.removeItem(atPath: world.local("escape"))
            try FileManager.default.removeItem(atPath: world.local("abs"))
            let escape = try world.provider.itemID(at: RemotePath(["escape"]))
            let abs = try world.provider.itemID(at: RemotePath(["abs"]))
            try world.database.apply([.remove(try #require(escape)), .remove(try #require(abs))])
            try await world.sync()
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: world.local("escape")) == outside)
            try await world.expectAgreement()
        }
    }

    @Test("where the server cannot mark a symlink, it stays here, is refused with a reason, and the rest syncs",
          arguments: Remote.withOtherServers.filter { !$0.storesSymlinks })
    func symlinkRefused(remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.write("plain.txt", "synced")
            #expect(symlink("plain.txt", world.local("link")) == 0)
            // A bundle is one item: one that holds a symlink is refused whole.
            try world.write("Tool.app/Contents/main.txt", "member")
            #expect(symlink("main.txt", world.local("Tool.app/Contents/current")) == 0)
            var refusals: [String] = []
            for _ in 0..<3 {
                let result = try await world.pass.run()
                refusals += result.report.failed.map { "\($0.path): \($0.error)" }
                #expect(result.report.parked == nil)
            }
            for refused in ["link", "Tool.app"] {
                #expect(refusals.contains { $0.hasPrefix(refused + ":") && $0.contains("cannot store symlinks") }, "\(refusals)")
            }
            #expect(refusals.allSatisfy { $0.hasPrefix("link:") || $0.hasPrefix("Tool.app:") }, "\(refusals)")
            #expect(readFile(world.onServer("plain.txt")) == "synced")
            #expect(readFile(world.onServer("link")) == nil, "a symlink stored as a file")
            #expect(!FileManager.default.fileExists(atPath: world.onServer("Tool.app")), "a bundle published without its symlink")
            #expect(SyncWorld.tree(world.remoteDisk).keys.allSatisfy { !$0.contains(".tidesync-") }, "scratch left on the server")
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: world.local("link")) == "plain.txt")
            #expect(readFile(world.local("Tool.app/Contents/main.txt")) == "member")
        }
    }

    @Test("a file that vanishes between the scan and its upload is no error and is not uploaded", arguments: Remote.withOtherServers)
    func vanishing(remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.write("stays.txt", "s")
            try world.write("vanishes.txt", "v")
            let scan = try world.pass.scanner.scan()
            let local = scan.entries.mapValues { LocalObservation(kind: $0.kind, size: $0.stat.size, stat: $0.stat) }
            let plan = Reconciler.plan(base: try world.database.allItems(), local: local, remote: [:], now: Date(), host: "h")
            try FileManager.default.removeItem(atPath: world.local("vanishes.txt"))
            let report = try await world.pass.runner.run(plan, context: .init(remote: [:], recorded: [:], failures: [:]))
            #expect(report.failed.isEmpty)
            #expect(report.succeeded == 1)
            try await world.sync()
            try await world.expectAgreement()
            #expect(readFile(world.onServer("vanishes.txt")) == nil)
        }
    }

    @Test("edited on both sides: the local version is kept as a conflict copy", arguments: Remote.withOtherServers)
    func conflict(remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.write("report.txt", "base")
            try await world.sync()
            try await Task.sleep(for: .milliseconds(1100))
            try world.write("report.txt", "mine, longer")
            try world.writeOnServer("report.txt", "theirs")
            try await world.sync()
            try await world.expectAgreement()
            let names = SyncWorld.tree(world.localRoot).keys.sorted()
            #expect(names.count == 2)
            #expect(readFile(world.local("report.txt")) == "theirs")
            let copy = try #require(names.first { $0.hasPrefix("report (conflicted copy ") })
            #expect(copy.hasSuffix(" testhost).txt"))
            #expect(readFile(world.local(copy)) == "mine, longer")
        }
    }

    @Test("same bytes created on both sides are no conflict", arguments: Remote.withOtherServers)
    func sameBytes(remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.write("both.txt", "identical")
            try world.writeOnServer("both.txt", "identical")
            try await world.sync()
            try await world.expectAgreement()
            #expect(SyncWorld.tree(world.localRoot).count == 1)
        }
    }
}

@Suite("mass-delete guard")
struct MassDeleteTests {
    @Test("a pass that would delete more than max_delete items holds its deletions back", arguments: Remote.withOtherServers)
    func holdsBack(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            for index in 0..<30 { try world.write("f/\(index).txt", "\(index)") }
            try await world.sync()
            try FileManager.default.removeItem(atPath: world.local("f"))
            let guarded = SyncPass(runner: world.pass.runner, scanner: world.pass.scanner, host: "h",
                                   massDelete: MassDeleteGuard(limit: 20), logger: .init(label: "t"))
            let result = try await guarded.run()
            #expect(result.report.parked?.code == .massDeletePaused)
            #expect(SyncWorld.tree(world.remoteDisk).count == 31)
            // Confirmed (no guard): the deletion goes through.
            try await world.sync()
            #expect(SyncWorld.tree(world.remoteDisk).isEmpty)
        }
    }
}
