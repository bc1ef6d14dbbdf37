import Foundation
import LocalStore
import Replica
import StateDatabase
import Synchronization
import SyncEngine
import Testing
import TestSupport

/// A store that works for `writes` write requests and then, like a server that went away
/// or a daemon killed at that moment, fails every request.
final class CrashingStore: RemoteStore {
    let inner: any RemoteStore
    let writes: Int
    private let count = Mutex(0)

    init(_ inner: any RemoteStore, writes: Int) {
        self.inner = inner
        self.writes = writes
    }

    var crashed: Bool { count.withLock { $0 >= writes } }

    /// True once an old version was renamed to its doomed name (checked, to be deleted).
    var doomed: Bool { doomedOnce.withLock { $0 } }
    private let doomedOnce = Mutex(false)

    private func read() throws(ProviderError) {
        if crashed { throw ProviderError(.serverUnreachable, "crashed") }
    }

    private func write() throws(ProviderError) {
        let go = count.withLock { n -> Bool in
            defer { n += 1 }
            return n < writes
        }
        if !go { throw ProviderError(.serverUnreachable, "crashed") }
    }

    func entry(at path: RemotePath) async throws(ProviderError) -> RemoteEntry { try read(); return try await inner.entry(at: path) }
    func children(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry] { try read(); return try await inner.children(of: path) }
    func descendants(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry] { try read(); return try await inner.descendants(of: path) }
    func download(_ path: RemotePath, range: ByteRange?, version: ETag?, to destination: URL,
                  progress: TransferProgress?) async throws(ProviderError) -> ETag? {
        try read()
        return try await inner.download(path, range: range, version: version, to: destination, progress: progress)
    }
    func upload(from source: URL, to path: RemotePath, condition: WriteCondition,
                progress: TransferProgress?) async throws(ProviderError) -> RemoteEntry {
        try write()
        return try await inner.upload(from: source, to: path, condition: condition, progress: progress)
    }
    func makeFolder(at path: RemotePath) async throws(ProviderError) -> RemoteEntry { try write(); return try await inner.makeFolder(at: path) }
    func makeSymlink(at path: RemotePath, target: String, condition: WriteCondition) async throws(ProviderError) -> RemoteEntry {
        try write()
        return try await inner.makeSymlink(at: path, target: target, condition: condition)
    }
    func move(_ source: RemotePath, to destination: RemotePath, version: ETag?) async throws(ProviderError) -> RemoteEntry {
        try write()
        let entry = try await inner.move(source, to: destination, version: version)
        if destination.name.hasSuffix(BundleManifest.doomedSuffix) { doomedOnce.withLock { $0 = true } }
        return entry
    }
    func delete(_ path: RemotePath, version: ETag?) async throws(ProviderError) { try write(); try await inner.delete(path, version: version) }
    func copy(_ source: RemotePath, to destination: RemotePath) async throws(ProviderError) -> Bool {
        try write()
        return try await inner.copy(source, to: destination)
    }

    func exchangeBundle(_ path: RemotePath, with replacement: RemotePath, version: ETag) async throws(ProviderError) -> Bool {
        try write()
        return try await inner.exchangeBundle(path, with: replacement, version: version)
    }
}

/// A bundle write cut off after every possible number of requests, then cleaned up as a
/// restart does: the server holds the old bundle or the new one, whole, and no scratch.
@Suite("Bundle writes cut off at every step")
struct BundleFailureTests {
    func p(_ text: String) -> RemotePath { try! RemotePath(string: text) }

    static func scratchNames(_ world: SyncWorld) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: world.remoteDisk)) ?? []).filter { $0.hasPrefix(".tidesync-") && $0 != ".tidesync-store.lock" }
    }

    @Test("replacing a bundle, cut off after 0, 1, 2 … requests", arguments: Remote.withOtherServers)
    func replacement(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try BundleScenarioTests.makeBundle(world, "Cut.app", files: 9)
            try await world.sync()
            let old = BundleScenarioTests.serverManifest(world, "Cut.app")
            let record = try #require(try BundleScenarioTests.row(world, "Cut.app"))
            try world.write("Cut.app/Contents/member-0.txt", "new 0")
            try world.write("Cut.app/Contents/added.txt", "added")
            #expect(unlink(world.local("Cut.app/Contents/member-3.txt")) == 0)
            let bundle = try #require(LocalBundle.scan(at: world.local("Cut.app"), path: p("Cut.app")))
            let members = try bundle.manifest(root: world.local("Cut.app"), previous: try world.database.bundleMembers(of: record.id))
            var outcomes: [String] = []
            for writes in 0..<40 {
                let token = UUID().uuidString
                let crashing = SyncProvider(store: CrashingStore(world.store, writes: writes), state: world.database)
                var finished = false
                do {
                    try await crashing.uploadBundle(BundleContents(directory: URL(fileURLWithPath: world.local("Cut.app")), members: members),
                                                    to: p("Cut.app"), condition: .mustMatch(record.remoteETag!), source: bundle.stat,
                                                    item: record.id, scratchToken: token, operation: nil)
                    finished = true
                } catch {}
                // The restart.
                try await world.provider.cleanUpScratch(beside: p("Cut.app"), token: token, base: record.remoteETag, host: "testhost")
                let now = BundleScenarioTests.serverManifest(world, "Cut.app")
                let state = now == old ? "old" : now.isEmpty ? "NONE" : now["Contents/added.txt"] == .file("added") && now["Contents/member-3.txt"] == nil ? "new" : "MIX"
                outcomes.append("\(writes):\(state)")
                #expect(state == "old" || state == "new", "cut after \(writes) requests: the server holds \(state)")
                #expect(Self.scratchNames(world).isEmpty, "cut after \(writes) requests: scratch left: \(Self.scratchNames(world))")
                if finished || state == "new" { break }
            }
            #expect(outcomes.last?.hasSuffix(":new") == true, "\(outcomes)")
            print("bundle replacement cut off (\(remote)): \(outcomes.joined(separator: " "))")
        }
    }

    @Test("deleting a bundle, cut off after 0, 1, 2 … requests", arguments: Remote.withOtherServers)
    func deletion(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try BundleScenarioTests.makeBundle(world, "Gone.app", files: 6)
            try await world.sync()
            let old = BundleScenarioTests.serverManifest(world, "Gone.app")
            let record = try #require(try BundleScenarioTests.row(world, "Gone.app"))
            #expect(!old.isEmpty)
            var outcomes: [String] = []
            for writes in 0..<40 {
                let token = UUID().uuidString
                let store = CrashingStore(world.store, writes: writes)
                let crashing = SyncProvider(store: store, state: world.database)
                var finished = false
                do {
                    try await crashing.deleteRemote(p("Gone.app"), version: record.remoteETag, item: record.id, scratchToken: token, operation: nil)
                    finished = true
                } catch {
                    // Only the cut itself may stop it: any other failure is a defect of the deletion.
                    let cut = (error as? ProviderError).map { $0.code == .serverUnreachable && $0.message == "crashed" } ?? false
                    #expect(store.crashed && cut, "cut after \(writes) requests: the deletion failed otherwise: \(error)")
                }
                // The restart.
                try await world.provider.cleanUpScratch(beside: p("Gone.app"), token: token, base: record.remoteETag, host: "testhost")
                let now = BundleScenarioTests.serverManifest(world, "Gone.app")
                let state = now == old ? "old" : now.isEmpty ? "gone" : "PART"
                outcomes.append("\(writes):\(state)")
                #expect(state != "PART", "cut after \(writes) requests: a part of the bundle is left: \(now.keys.sorted())")
                #expect(Self.scratchNames(world).isEmpty, "cut after \(writes) requests: scratch left: \(Self.scratchNames(world))")
                if finished {
                    #expect(state == "gone", "the deletion finished, yet the server holds \(now.keys.sorted())")
                    break
                }
                // Once checked and renamed to its doomed name, the clean-up finishes the deletion.
                #expect(state == (store.doomed ? "gone" : "old"), "cut after \(writes) requests, doomed \(store.doomed): the server holds \(state)")
            }
            // It did end: a deletion that never finishes (or never deletes) fails here.
            #expect(outcomes.last?.hasSuffix(":gone") == true, "\(outcomes)")
            #expect(!FileManager.default.fileExists(atPath: world.onServer("Gone.app")), "Gone.app is still on the server")
            print("bundle deletion cut off (\(remote)): \(outcomes.joined(separator: " "))")
        }
    }

    @Test("scratch that moved with its folder (another client moved it mid-write) is found and cleaned up", arguments: Remote.withOtherServers)
    func movedScratch(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            // As if: we were building a new version of d/New.app and had the old version of
            // d/Old.app set aside, when another client moved the folder d to e.
            try world.makeServerFolder("d")
            let built = try BundleScratch(beside: p("d/New.app"), token: "T2")
            _ = try await world.store.makeFolder(at: built.building)
            _ = try await world.store.makeFolder(at: try built.building.appending("Contents"))
            try world.writeOnServer("d/Old.app/Contents/member-0.txt", "old")
            let aside = try BundleScratch(beside: p("d/Old.app"), token: "T3")
            _ = try await world.store.move(p("d/Old.app"), to: aside.aside, version: nil)
            _ = try await world.store.move(p("d"), to: p("e"), version: nil)
            try await world.provider.cleanUpScratch(beside: p("d/New.app"), token: "T2", base: nil, host: "testhost")
            try await world.provider.cleanUpScratch(beside: p("d/Old.app"), token: "T3", base: nil, host: "testhost")
            let names = try FileManager.default.contentsOfDirectory(atPath: world.onServer("e")).sorted()
            #expect(names == ["Old.app"], "the folder e holds \(names)")
            #expect(readFile(world.onServer("e/Old.app/Contents/member-0.txt")) == "old", "the version set aside is back in place")
        }
    }

    @Test("another client's version set aside when we crashed is kept, never deleted", arguments: Remote.withOtherServers)
    func othersVersionAside(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try BundleScenarioTests.makeBundle(world, "Race.app", files: 3)
            try await world.sync()
            let record = try #require(try BundleScenarioTests.row(world, "Race.app"))
            // As if: another client changed the bundle, we set it aside, moved ours in and crashed.
            let token = "T1"
            let scratch = try BundleScratch(beside: p("Race.app"), token: token)
            try world.writeOnServer("Race.app/Contents/member-0.txt", "theirs")
            _ = try await world.store.move(p("Race.app"), to: scratch.aside, version: nil)
            try world.makeServerFolder("Race.app/Contents")
            try world.writeOnServer("Race.app/Contents/member-0.txt", "ours")
            let kept = try await world.provider.cleanUpScratch(beside: p("Race.app"), token: token, base: record.remoteETag,
                                                               host: "testhost")
            let names = try FileManager.default.contentsOfDirectory(atPath: world.remoteDisk).filter { $0.hasPrefix("Race") }
            #expect(names.count == 2, "\(names)")
            let copy = try #require(names.first { $0 != "Race.app" })
            #expect(readFile(world.onServer("\(copy)/Contents/member-0.txt")) == "theirs")
            // Never silent: the caller is told (and logs it), and `tidesync conflicts` lists it.
            #expect(kept == [p(copy)])
            let listed = try world.database.conflicts()
            #expect(listed.map(\.copy) == [p(copy)] && listed.first?.original == p("Race.app") && listed.first?.kind == .bundle,
                    "\(listed)")
            #expect(Self.scratchNames(world).isEmpty)
        }
    }
}
