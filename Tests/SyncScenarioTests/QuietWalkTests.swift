import Foundation
import Replica
import Synchronization
import SyncEngine
import Testing
import TestSupport

/// Issue 16, idle costs nothing: a remote walk that finds nothing changed writes nothing to
/// the state DB (a poll every 30 s made a commit each time, for nothing).
@Suite("A remote walk that finds nothing changed")
struct QuietWalkTests {
    /// A clock a second further on at every look, so no two walks share a time stamp.
    final class TickingClock: SyncClock {
        let time = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        func now() -> Date { time.withLock { $0 += 1; return $0 } }
        func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
    }

    @Test("keeps its sync anchor and writes nothing; a walk that finds a change records a new one",
          arguments: Remote.withOtherServers)
    func keepsItsAnchor(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.writeOnServer("a.txt", "a")
            let provider = SyncProvider(store: world.store, state: world.database, clock: TickingClock())
            _ = try await RemoteSafetyScenarioTests.run(RemoteMoveJournalTests.pass(world, provider: provider))
            #expect(readFile(world.local("a.txt")) == "a")
            let anchor = try #require(try world.database.syncAnchor())
            let quiet = try await provider.changes(since: anchor)
            #expect(quiet.updated.isEmpty && quiet.deleted.isEmpty)
            #expect(try world.database.syncAnchor() == anchor, "a walk that found nothing wrote a new anchor")
            try world.writeOnServer("a.txt", "a, changed")
            let changed = try await provider.changes(since: anchor)
            #expect(changed.updated.map(\.path.description) == ["a.txt"])
            #expect(try world.database.syncAnchor() != anchor)
        }
    }

    @Test("an idle poll plans nothing; a change on the server, a settled path or a row without a version is planned",
          arguments: Remote.withOtherServers)
    func idlePollSkipsThePlan(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.writeOnServer("a.txt", "a")
            try writeFile(world.local("b.txt"), "b")
            let provider = SyncProvider(store: world.store, state: world.database)
            let pass = RemoteMoveJournalTests.pass(world, provider: provider)
            _ = try await RemoteSafetyScenarioTests.run(pass)
            let poll = PassScope.watched(SettledChanges(), remote: true)
            #expect(try await pass.run(poll).planned == false, "an idle poll planned")
            try world.writeOnServer("a.txt", "a, changed")
            try await world.waitUntilServed("a.txt", "a, changed")
            let changed = try await pass.run(poll)
            #expect(changed.planned && changed.steps == 1)
            #expect(readFile(world.local("a.txt")) == "a, changed")
            #expect(try await pass.run(poll).planned == false)
            let settled = SettledChanges(paths: [try RemotePath(["b.txt"]): false])
            #expect(try await pass.run(.watched(settled, remote: true)).planned, "a settled path was passed over")
            var row = try #require(try world.database.allItems().first { $0.name == "b.txt" })
            row.remoteETag = nil
            try world.database.apply([.upsert(row)])
            #expect(try await pass.run(poll).planned, "a row without a remote version was passed over")
        }
    }
}
