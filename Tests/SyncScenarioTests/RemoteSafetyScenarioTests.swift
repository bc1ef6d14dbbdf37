import Foundation
import LocalStore
import Logging
import Replica
import StateDatabase
import SyncEngine
import Testing
import TestSupport
import WebDAV

#if canImport(Glibc)
import Glibc
#endif

/// Issue 13, items 2 and 3, with real parts: the engine and replica over a temp folder, the
/// local-directory store and the private Apache, and a pass guarded as the daemon's is.
@Suite("Scenario: a repointed or emptied remote deletes nothing")
struct RemoteSafetyScenarioTests {
    /// A pass as `DomainService` builds it: mass-delete guard on, remote identity checked.
    static func guardedPass(_ world: SyncWorld, store: any RemoteStore, location: String,
                            release: DeletionRelease = DeletionRelease(), stop: StopFlag = StopFlag()) -> SyncPass {
        var logger = Logger(label: "scenario-guarded")
        logger.logLevel = .warning
        let exclude = ExcludeList(patterns: ExcludeList.defaultPatterns)
        let provider = SyncProvider(store: store, state: world.database)
        let runner = PlanRunner(provider: provider, folder: LocalFolder(root: world.localRoot), transfers: 4, logger: logger,
                                stop: stop)
        return SyncPass(runner: runner, scanner: LocalScanner(root: world.localRoot, exclude: exclude), host: "testhost",
                        massDelete: MassDeleteGuard(limit: 500), remote: RemoteBinding(domain: "home", location: location),
                        release: release, logger: logger)
    }

    /// Runs `pass` until it has nothing to do, or holds deletions; fails on a failed step.
    @discardableResult
    static func run(_ pass: SyncPass, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [PassResult] {
        var results: [PassResult] = []
        for _ in 0..<4 {
            let result = try await pass.run()
            results.append(result)
            for failure in result.report.failed { Issue.record("\(failure.path): \(failure.error)", sourceLocation: sourceLocation) }
            if result.steps == 0 || result.held != nil { return results }
        }
        Issue.record("no agreement after 4 passes", sourceLocation: sourceLocation)
        return results
    }

    static func twentyFiles(_ world: SyncWorld) throws {
        for n in 0..<20 { try world.write("f\(n).txt", "file \(n)") }
    }

    // MARK: Item 3

    @Test("a server emptied at once: the 20 local files stay until the user allows the deletions",
          arguments: Remote.withOtherServers)
    func emptiedServer(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try Self.twentyFiles(world)
            let pass = Self.guardedPass(world, store: world.store, location: "test://\(world.scratch)")
            try await Self.run(pass)
            for entry in try await world.store.children(of: .root) { try await world.store.delete(entry.path, version: nil) }

            for _ in 0..<2 {
                let result = try await Self.run(pass).last!
                #expect(result.held == DeletionHold(reason: .sideEmptied, side: .local, items: 20, steps: result.held?.steps ?? []))
                #expect(result.report.parked?.code == .massDeletePaused)
                #expect(result.report.parked?.message.contains("tidesync allow-deletions home") == true)
                #expect(SyncWorld.tree(world.localRoot).count == 20)
            }
            #expect(pass.release.release()?.items == 20)
            let released = try await Self.run(pass)
            #expect(released.allSatisfy { $0.held == nil })
            #expect(SyncWorld.tree(world.localRoot).isEmpty)
            try await world.expectAgreement()
        }
    }

    @Test("a sync folder emptied at once: the 20 files on the server stay until the user allows the deletions",
          arguments: Remote.withOtherServers)
    func emptiedFolder(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try Self.twentyFiles(world)
            let pass = Self.guardedPass(world, store: world.store, location: "test://\(world.scratch)")
            try await Self.run(pass)
            for n in 0..<20 { try FileManager.default.removeItem(atPath: world.local("f\(n).txt")) }

            let result = try await Self.run(pass).last!
            #expect(result.held?.side == .remote)
            #expect(result.held?.items == 20)
            #expect(try await world.store.children(of: .root).count == 20)
            // A release covers that hold once; the server's files go.
            pass.release.release()
            try await Self.run(pass)
            #expect(try await world.store.children(of: .root).isEmpty)
        }
    }

    // MARK: Item 2

    @Test("a domain pointed at another remote merges both trees as a first sync; nothing is deleted",
          arguments: Remote.withOtherServers)
    func repointed(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try Self.twentyFiles(world)
            try await Self.run(Self.guardedPass(world, store: world.store, location: "test://a"))
            try await withSecondRemote(remote, world) { other, disk in
                // The new remote already holds f0.txt with other bytes, f1.txt with the same
                // bytes, and a file of its own.
                try writeFile(disk + "/f0.txt", "theirs")
                try writeFile(disk + "/f1.txt", "file 1")
                try writeFile(disk + "/only-there.txt", "theirs only")
                Self.giveToServer(remote, [disk, disk + "/f0.txt", disk + "/f1.txt", disk + "/only-there.txt"])
                let pass = Self.guardedPass(world, store: other, location: "test://b")
                let results = try await Self.run(pass)
                #expect(results.first?.remoteChange?.from.location == "test://a")
                #expect(results.first?.remoteChange?.to.location == "test://b")
                #expect(results.allSatisfy { $0.held == nil })

                let local = SyncWorld.tree(world.localRoot)
                for n in 1..<20 { #expect(local["f\(n).txt"] == .file("file \(n)")) }
                #expect(local["f0.txt"] == .file("theirs"))
                #expect(local["only-there.txt"] == .file("theirs only"))
                #expect(local.values.filter { $0 == .file("file 0") }.count == 1, "our f0.txt kept as a conflict copy")
                #expect(local.count == 22)
                let names = try await other.children(of: .root).map(\.path.name)
                #expect(names.count == 22)
                #expect(try world.database.remoteIdentity()?.location == "test://b")
            }
        }
    }

    @Test("an empty store folder put where the synced one was (a disk not mounted) parks the domain; nothing is merged into it")
    func replacedEmptyRoot() async throws {
        try await withWorld(.localDirectory) { world in
            for n in 0..<3 { try world.write("f\(n).txt", "file \(n)") }
            try await Self.run(Self.guardedPass(world, store: world.store, location: "test://a"))
            let recorded = try world.database.remoteIdentity()
            #expect(recorded?.rootFileID != nil, "the local-directory store reports its root's inode")
            #expect(rename(world.remoteDisk, world.remoteDisk + ".unmounted") == 0)
            defer { try? FileManager.default.removeItem(atPath: world.remoteDisk + ".unmounted") }
            try FileManager.default.createDirectory(atPath: world.remoteDisk, withIntermediateDirectories: false)
            do {
                _ = try await Self.guardedPass(world, store: world.store, location: "test://a").run()
                Issue.record("the pass merged into an empty, replaced store folder")
            } catch let error as ProviderError {
                #expect(error.code == .cannotSynchronize && error.message.contains("mount"), "\(error)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: world.remoteDisk).isEmpty, "nothing uploaded")
            for n in 0..<3 { #expect(readFile(world.local("f\(n).txt")) == "file \(n)") }
            #expect(try world.database.remoteIdentity() == recorded, "the old rows and identity are kept")
        }
    }

    /// Chowns files a root test made on Apache's disk to Apache's user.
    static func giveToServer(_ remote: Remote, _ paths: [String]) {
        guard remote == .apache, getuid() == 0, let owner = TestApache.owner else { return }
        for path in paths {
            try? FileManager.default.setAttributes([.ownerAccountName: owner, .groupOwnerAccountName: owner], ofItemAtPath: path)
        }
    }

    @Test("a merge cut short after the switch goes on as a first sync against the new remote, never with the old rows",
          arguments: Remote.withOtherServers)
    func mergeCutShort(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try Self.twentyFiles(world)
            try await Self.run(Self.guardedPass(world, store: world.store, location: "test://a"))
            try await withSecondRemote(remote, world) { other, disk in
                try writeFile(disk + "/only-there.txt", "theirs only")
                Self.giveToServer(remote, [disk, disk + "/only-there.txt"])
                // The pass switches the identity, plans, and is stopped before any step runs:
                // what a kill -9 right after the switch leaves behind.
                let stopped = StopFlag()
                stopped.stop()
                let cut = try await Self.guardedPass(world, store: other, location: "test://b", stop: stopped).run()
                #expect(cut.remoteChange != nil)
                #expect(cut.report.succeeded == 0)
                #expect(try world.database.allItems().count == 1, "only the root's row is left")
                #expect(try world.database.remoteIdentity()?.location == "test://b")

                let results = try await Self.run(Self.guardedPass(world, store: other, location: "test://b"))
                #expect(results.allSatisfy { $0.remoteChange == nil && $0.held == nil })
                let local = SyncWorld.tree(world.localRoot)
                for n in 0..<20 { #expect(local["f\(n).txt"] == .file("file \(n)")) }
                #expect(local["only-there.txt"] == .file("theirs only"))
                #expect(try await other.children(of: .root).count == 21)
            }
        }
    }

    /// Runs `body` with a second, empty remote beside the world's (a folder, or a new
    /// collection on Apache) and the path of its files on disk.
    func withSecondRemote(_ remote: Remote, _ world: SyncWorld,
                          _ body: (any RemoteStore, String) async throws -> Void) async throws {
        switch remote {
        case .localDirectory:
            let disk = world.scratch + "/remote-b"
            try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
            try await body(LocalDirectoryStore(root: disk), disk)
        case .apache, .nginx, .lighttpd, .wsgidav, .rclone:
            try await TestApache.withCollection(below: TestApache.depthInfinityURL!, diskRoot: TestApache.depthInfinityDiskRoot!) {
                try await body($0, $1)
            }
        }
    }
}
