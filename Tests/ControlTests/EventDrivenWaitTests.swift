@testable import Daemon
import Control
import Foundation
import Logging
import Replica
import SyncModel
import Testing
import TidesyncConfig

/// The daemon's waits end on events (stop, sync-now), never by polling a
/// flag on a timer: an idle daemon must not wake up. A wait that did not end on its event
/// would run into the suite's time limit rather than pass slowly.
@Suite("the daemon waits on events, not timers", .timeLimit(.minutes(1)))
struct EventDrivenWaitTests {
    func domain(_ name: String, local: String) -> DomainConfiguration {
        DomainConfiguration(name: name, localPath: local, remote: .localDirectory(local + "-remote"))
    }

    func configuration(_ domains: [DomainConfiguration], directory: String) -> TidesyncConfiguration {
        TidesyncConfiguration(filePath: directory + "/config.toml", logLevel: .info, socketPath: directory + "/s",
                              stateDirectory: directory, domains: domains, notices: [])
    }

    func scratch() throws -> String {
        let directory = NSTemporaryDirectory() + "tidesync-wait-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test func aParkedDomainsRetryWaitEndsAtSyncNow() async {
        let monitor = DomainMonitor(name: "home")
        let stop = StopFlag()
        let waiting = Task { await monitor.wait(for: .seconds(3600), stop: stop) }
        monitor.syncNow()
        await waiting.value
        #expect(!monitor.takeSyncNowRequest(), "the wait takes the sync-now it ended on")
    }

    @Test func aParkedDomainsRetryWaitEndsWhenStopped() async {
        let monitor = DomainMonitor(name: "home")
        let stop = StopFlag()
        let waiting = Task { await monitor.wait(for: .seconds(3600), stop: stop) }
        stop.stop()
        await waiting.value
        await monitor.wait(for: .seconds(3600), stop: stop)
    }

    @Test func theSupervisorReturnsWhenStoppedWithNoDomains() async throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let supervisor = Supervisor(configuration: configuration([], directory: directory), allowMassDelete: false,
                                    logger: Logger(label: "test"))
        let running = Task { await supervisor.run() }
        supervisor.stop()
        await running.value
        // Stopped before it ran: run returns at once.
        let early = Supervisor(configuration: configuration([], directory: directory), allowMassDelete: false,
                               logger: Logger(label: "test"))
        early.stop()
        await early.run()
    }
}
