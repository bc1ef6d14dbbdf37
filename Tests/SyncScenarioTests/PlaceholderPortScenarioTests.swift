import Foundation
import Logging
import Replica
import SyncEngine
import Testing
import TestSupport

/// Issue 14, item 2: the runner puts every remote file in the folder through the domain's
/// placeholder port and records what the port placed, on both stores.
@Suite("Scenario: every download goes through the placeholder port")
struct PlaceholderPortScenarioTests {
    /// `PlaceholdersOff` that remembers each file it was asked to bring down, and whether a
    /// local file was to be replaced; or refuses them all.
    final class RecordingPort: PlaceholderPort, @unchecked Sendable {
        let inner: PlaceholdersOff
        let refuse: Bool
        private let lock = NSLock()
        private var seen: [String] = []

        init(folder: LocalFolder, refuse: Bool = false) {
            inner = PlaceholdersOff(folder: folder)
            self.refuse = refuse
        }

        var calls: [String] { lock.withLock { seen.sorted() } }

        func bringDown(_ entry: RemoteEntry, at path: RemotePath, replacing: LocalStat?, temporary: URL,
                       bytes: RemoteBytes) async throws(ProviderError) -> PlacedFile {
            lock.withLock { seen.append("\(path)\(replacing == nil ? "" : " (replacing)")") }
            if refuse { throw ProviderError(.cannotSynchronize, "this port places nothing") }
            return try await inner.bringDown(entry, at: path, replacing: replacing, temporary: temporary, bytes: bytes)
        }

        func hydrate(_ path: RemotePath, range: ByteRange, bytes: RemoteBytes) async throws(ProviderError) -> Materialization {
            try await inner.hydrate(path, range: range, bytes: bytes)
        }

        func materialize(_ path: RemotePath, bytes: RemoteBytes) async throws(ProviderError) -> PlacedFile {
            try await inner.materialize(path, bytes: bytes)
        }

        func evict(_ path: RemotePath) async throws(ProviderError) -> PlacedFile { try await inner.evict(path) }

        func state(of path: RemotePath) throws(ProviderError) -> Materialization { try inner.state(of: path) }
    }

    /// The system clock moved on by `shift`: a later pass sees a failed step's backoff over.
    struct ShiftedClock: SyncClock {
        let shift: TimeInterval
        func now() -> Date { Date().addingTimeInterval(shift) }
        func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
    }

    static func pass(_ world: SyncWorld, port: RecordingPort, later: TimeInterval = 0) -> SyncPass {
        var logger = Logger(label: "scenario-placeholders")
        logger.logLevel = .warning
        let runner = PlanRunner(provider: SyncProvider(store: world.store, state: world.database, clock: ShiftedClock(shift: later)),
                                folder: LocalFolder(root: world.localRoot), transfers: 4, logger: logger, placeholders: port)
        return SyncPass(runner: runner, scanner: LocalScanner(root: world.localRoot, exclude: ExcludeList(patterns: [])),
                        host: "testhost", logger: logger)
    }

    @Test("new and changed remote files are brought down by the port, and recorded as it placed them",
          arguments: Remote.withOtherServers)
    func downloads(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.writeOnServer("a.txt", "one")
            try world.writeOnServer("sub/b.txt", "two")
            let port = RecordingPort(folder: LocalFolder(root: world.localRoot))
            let pass = Self.pass(world, port: port)
            try await RemoteSafetyScenarioTests.run(pass)
            #expect(port.calls == ["a.txt", "sub/b.txt"])
            try world.writeOnServer("a.txt", "one, changed on the server")
            // lighttpd serves a file changed on its disk at its old length for about a
            // second, which the download refuses as another version: four quick passes
            // could all fall in that second.
            try await world.waitUntilServed("a.txt", "one, changed on the server")
            try await RemoteSafetyScenarioTests.run(pass)
            #expect(port.calls == ["a.txt", "a.txt (replacing)", "sub/b.txt"])
            #expect(readFile(world.local("a.txt")) == "one, changed on the server")
            try await world.expectAgreement()
        }
    }

    @Test("a file the port does not place is neither in the folder nor recorded, and is tried again",
          arguments: Remote.withOtherServers)
    func refused(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.writeOnServer("a.txt", "one")
            let refusing = RecordingPort(folder: LocalFolder(root: world.localRoot), refuse: true)
            let result = try await Self.pass(world, port: refusing).run()
            #expect(result.report.failed.map(\.path) == [try RemotePath(string: "a.txt")])
            #expect(refusing.calls == ["a.txt"])
            #expect(!FileManager.default.fileExists(atPath: world.local("a.txt")))
            #expect(try world.database.allItems().contains { $0.name == "a.txt" } == false)
            let port = RecordingPort(folder: LocalFolder(root: world.localRoot))
            try await RemoteSafetyScenarioTests.run(Self.pass(world, port: port, later: 86_400))
            #expect(port.calls == ["a.txt"])
            #expect(readFile(world.local("a.txt")) == "one")
        }
    }
}
