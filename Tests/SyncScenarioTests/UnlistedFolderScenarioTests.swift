import Foundation
import Replica
import StateDatabase
import SyncEngine
import Testing
import TestSupport
import WebDAV

/// A remote folder the server will not list (issue 13, item 1): nothing below it is
/// planned — no local deletion, no upload — the rest of the domain syncs, the pass and the
/// state DB (what `tidesync status` reads) name it, and it syncs once it can be listed.
@Suite("a remote folder that cannot be listed")
struct UnlistedFolderScenarioTests {
    /// Where the refusal comes from: Apache's 403 for a collection named `unlistable-*`
    /// (`/dav/`, which walks folder by folder), or the in-memory store answering 503.
    enum Refusal: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case apache403
        case memory503
        var testDescription: String { rawValue }
        static var available: [Refusal] { TestApache.depthInfinityConfigured ? allCases : [.memory503] }
    }

    @Test("nothing below it is deleted or uploaded; the rest syncs; status names it", arguments: Refusal.available)
    func unlistedFolder(refusal: Refusal) async throws {
        let world = try await UnlistedWorld(refusal)
        do { try await scenario(world, refusal: refusal) } catch {
            await world.close()
            throw error
        }
        await world.close()
    }

    func scenario(_ world: UnlistedWorld, refusal: Refusal) async throws {
        try world.write("keep/a.txt", "a")
        try world.write("unlistable-x/f.txt", "f 1")
        try world.write("unlistable-x/deep/g.txt", "g")
        _ = try await world.pass.run()  // uploads everything (PROPFIND Depth 0 is allowed there)
        world.refuse()

        try world.write("keep/b.txt", "b")
        try world.write("unlistable-x/f.txt", "f 2, while unlisted")
        try await world.deleteOnServer("unlistable-x/deep/g.txt")
        var last = try await world.pass.run()
        // Held back: a child another test forked may hold the new file open for a moment.
        for _ in 0..<6 where last.steps > 0 || !last.heldBack.isEmpty { last = try await world.pass.run() }
        #expect(last.heldBack.isEmpty, "still held back: \(last.heldBack)")

        #expect(last.report.failed.isEmpty && last.report.parked == nil)
        #expect(readFile(world.local("unlistable-x/deep/g.txt")) == "g", "a file below the unlisted folder was deleted locally")
        #expect(try await world.serverText("unlistable-x/f.txt") == "f 1", "a change below the unlisted folder was uploaded")
        #expect(try await world.serverText("keep/b.txt") == "b", "the rest of the domain stopped syncing")
        let expected = [UnreadableFolder(path: try RemotePath(string: "unlistable-x"), side: .remote, reason: "")]
        #expect(last.unreadable.map(\.path) == expected.map(\.path) && last.unreadable.map(\.side) == [.remote])
        #expect(last.unreadable.first?.reason.contains(refusal == .apache403 ? "HTTP 403" : "failed") == true, "\(last.unreadable)")
        #expect(try world.database.unreadableFolders() == last.unreadable)

        guard refusal == .memory503 else { return }  // Apache refuses that name for good
        world.allow()
        _ = try await world.pass.run()
        #expect(readFile(world.local("unlistable-x/deep/g.txt")) == nil, "the deletion made while unlisted is applied once listed")
        #expect(try await world.serverText("unlistable-x/f.txt") == "f 2, while unlisted")
        #expect(try world.database.unreadableFolders().isEmpty)
    }
}

extension UnlistedFolderScenarioTests {
    /// An unlisted folder is taken as recorded on both sides; it must not make a server
    /// emptied around it look full (the review of issue 13's items 1 and 3 found that).
    @Test("the server emptied but for a folder it cannot list: nothing here is deleted, the deletions are held",
          arguments: Refusal.available)
    func emptiedAroundUnlisted(refusal: Refusal) async throws {
        let world = try await UnlistedWorld(refusal, massDelete: MassDeleteGuard(limit: 500))
        do {
            for n in 0..<3 { try world.write("f\(n).txt", "\(n)") }
            try world.write("unlistable-x/f.txt", "f")
            _ = try await world.pass.run()
            world.refuse()
            for n in 0..<3 { try await world.deleteOnServer("f\(n).txt") }
            let result = try await world.pass.run()
            for n in 0..<3 { #expect(readFile(world.local("f\(n).txt")) == "\(n)", "f\(n).txt was deleted here") }
            #expect(result.held?.reason == .sideEmptied && result.held?.side == .local, "\(String(describing: result.held))")
            #expect(result.report.parked?.code == .massDeletePaused)
        } catch {
            await world.close()
            throw error
        }
        await world.close()
    }
}

/// A local folder synced with a store where `unlistable-x` can be refused.
final class UnlistedWorld: @unchecked Sendable {
    let refusal: UnlistedFolderScenarioTests.Refusal
    let scratch = temporaryPath("tidesync-unlisted-", short: true)
    var localRoot: String { scratch + "/local" }
    let store: any RemoteStore
    let database: StateDatabase
    let pass: SyncPass
    let collection: String
    static let hidden = try! RemotePath(string: "unlistable-x")

    init(_ refusal: UnlistedFolderScenarioTests.Refusal, massDelete: MassDeleteGuard? = nil) async throws {
        self.refusal = refusal
        collection = "u-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: scratch + "/local", withIntermediateDirectories: true)
        switch refusal {
        case .memory503:
            store = InMemoryRemoteStore()
        case .apache403:
            let base = URL(string: TestApache.urlText!)!
            let root = WebDAVStore(endpoint: try TestApache.endpoint(base), connections: 1)
            _ = try await root.makeFolder(at: RemotePath([collection]))
            await root.shutdown()
            store = WebDAVStore(endpoint: try TestApache.endpoint(base.appendingPathComponent(collection, isDirectory: true)))
        }
        database = try StateDatabase(path: scratch + "/state.sqlite")
        pass = SyncWorld.makePass(store: store, database: database, localRoot: scratch + "/local", massDelete: massDelete,
                                  host: "testhost")
    }

    func close() async {
        if let dav = store as? WebDAVStore {
            await dav.shutdown()
            let base = URL(string: TestApache.urlText!)!
            if let endpoint = try? TestApache.endpoint(base) {
                let root = WebDAVStore(endpoint: endpoint, connections: 1)
                try? await root.delete(RemotePath([collection]), version: nil)
                await root.shutdown()
            }
        }
        try? FileManager.default.removeItem(atPath: scratch)
    }

    func local(_ relative: String) -> String { localRoot + "/" + relative }
    func write(_ relative: String, _ text: String) throws { try writeFile(local(relative), text) }

    func refuse() {
        (store as? InMemoryRemoteStore)?.refuseListing(of: Self.hidden,
                                                       with: ProviderError(.serverUnreachable, "the server failed PROPFIND unlistable-x", underlying: "HTTP 503"))
    }

    func allow() { (store as? InMemoryRemoteStore)?.allowListing(of: Self.hidden) }

    /// Deletes on the server as another client would (no version check).
    func deleteOnServer(_ relative: String) async throws {
        try await store.delete(try RemotePath(string: relative), version: nil)
    }

    func serverText(_ relative: String) async throws -> String {
        let target = URL(fileURLWithPath: scratch + "/read-" + UUID().uuidString)
        _ = try await store.download(try RemotePath(string: relative), range: nil, version: nil, to: target, progress: nil)
        return String(decoding: try Data(contentsOf: target), as: UTF8.self)
    }
}
