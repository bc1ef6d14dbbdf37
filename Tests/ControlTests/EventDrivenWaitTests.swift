@testable import Daemon
import Control
import Foundation
import Logging
import Replica
import Synchronization
import SyncModel
import Testing
import TestSupport
import TidesyncConfig

/// The daemon's waits end on events (stop, sync-now, a status change), never by polling a
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
        let directory = temporaryPath("tidesync-wait-", short: true)
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
        #expect(await Self.ends { await waiting.value }, "the hour-long wait did not end on the stop")
        #expect(await Self.ends { await monitor.wait(for: .seconds(3600), stop: stop) },
                "a wait begun after the stop did not return at once")
    }

    @Test func onlyStatusLineChangesAreSignalled() {
        let changes = Mutex(0)
        let monitor = DomainMonitor(name: "home", onChange: { changes.withLock { $0 += 1 } })
        let step = PlannedStep(path: try! RemotePath(string: "a"), step: "upload", direction: .upload)
        monitor.passStarted()
        monitor.passStarted()
        monitor.planStarted([step])
        monitor.stepStarted(0)
        monitor.transferProgressed(step: 0, bytesDone: 1, bytesTotal: 2)
        monitor.updateWatcher(WatcherHealth(watchesInUse: 1, overflowRescans: 0, watchLimitReached: false))
        #expect(changes.withLock { $0 } == 2, "a pass started, a plan started; progress is not a change")
        monitor.stepEnded(0, succeeded: true)
        monitor.stepEnded(0, succeeded: true)
        monitor.setPaused(true)
        #expect(changes.withLock { $0 } == 4)
    }

    @Test func theSupervisorReturnsWhenStoppedWithNoDomains() async throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let supervisor = Supervisor(configuration: configuration([], directory: directory), allowMassDelete: false,
                                    logger: Logger(label: "test"))
        let running = Task { await supervisor.run() }
        supervisor.stop()
        #expect(await Self.ends { await running.value }, "the supervisor did not return when stopped")
        // Stopped before it ran: run returns at once.
        let early = Supervisor(configuration: configuration([], directory: directory), allowMassDelete: false,
                               logger: Logger(label: "test"))
        early.stop()
        #expect(await Self.ends { await early.run() }, "a supervisor stopped before it ran did not return")
    }

    @Test func aDomainThatCannotOpenIsSignalledParkedAndStopsAtOnce() async throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let missing = domain("gone", local: directory + "/no-such-folder")
        let supervisor = Supervisor(configuration: configuration([missing], directory: directory), allowMassDelete: false,
                                    logger: Logger(label: "test"))
        let running = Task { await supervisor.run() }
        // The status listener wakes when the domain parks: no polling here either.
        let parked = await Self.ends {
            for await _ in supervisor.statusChanges.stream() {
                if case .parked = supervisor.domains.first?.monitor.snapshot().phase { return }
            }
        }
        #expect(parked, "no status change signalled the domain parked")
        if case .parked(let error, _, _)? = supervisor.domains.first?.monitor.snapshot().phase {
            #expect(error.message.contains("no-such-folder"), "parked for another reason: \(error.message)")
        } else {
            Issue.record("the domain is not parked: \(String(describing: supervisor.domains.first?.monitor.snapshot().phase))")
        }
        supervisor.stop()
        #expect(await Self.ends { await running.value }, "the supervisor with a parked domain did not return when stopped")
    }

    /// True when `body` returns within `limit` (far more than an event-driven wait needs,
    /// far less than the hour the waits here are given): a wait that would only end on a
    /// timer fails here, named, instead of running into the suite's time limit.
    static func ends(within limit: Duration = .seconds(20), _ body: @escaping @Sendable () async -> Void) async -> Bool {
        let (outcomes, continuation) = AsyncStream<Bool>.makeStream()
        let work = Task {
            await body()
            continuation.yield(true)
        }
        let timer = Task {
            try? await Task.sleep(for: limit)
            continuation.yield(false)
        }
        var ended = false
        for await outcome in outcomes {
            ended = outcome
            break
        }
        timer.cancel()
        if !ended { work.cancel() }
        return ended
    }

    @Test func readyAndTheFirstLineGoAtOnceAndAnUnchangedLineIsNotSentAgain() {
        var announcer = ServiceAnnouncer()
        let start = ContinuousClock.now
        var synced = DomainMonitor.Snapshot()
        synced.phase = .idle
        synced.firstPassDone = true
        var starting = DomainMonitor.Snapshot()
        starting.phase = .starting
        #expect(announcer.next(for: [], now: start) == .send(.init(ready: false, status: "No domains")))
        #expect(announcer.next(for: [("home", starting)], now: start) == .send(.init(ready: false, status: "Starting")))
        let first = ServiceAnnouncer.Announcement(ready: true, status: "Synced")
        #expect(announcer.next(for: [("home", synced)], now: start) == .send(first))
        #expect(first.text == "READY=1\nSTATUS=Synced")
        announcer.sent(first, delivered: true, at: start)
        #expect(announcer.next(for: [("home", synced)], now: start + .seconds(5)) == .nothing)
    }

    @Test func aBurstOfChangesWaitsOutTheGapAndAFailedSendIsRetriedLater() {
        var announcer = ServiceAnnouncer()
        let start = ContinuousClock.now
        var syncing = DomainMonitor.Snapshot()
        syncing.phase = .syncing
        syncing.firstPassDone = true
        announcer.sent(.init(ready: true, status: "Synced"), delivered: true, at: start)
        let soon = start + .milliseconds(100)
        #expect(announcer.next(for: [("home", syncing)], now: soon) == .wait(until: start + ServiceAnnouncer.minimumGap))
        let later = start + ServiceAnnouncer.minimumGap
        let line = ServiceAnnouncer.Announcement(ready: false, status: "Syncing")
        #expect(announcer.next(for: [("home", syncing)], now: later) == .send(line))
        announcer.sent(line, delivered: false, at: later)
        // Not delivered: tried again, after twice the gap.
        #expect(announcer.next(for: [("home", syncing)], now: later) == .wait(until: later + ServiceAnnouncer.minimumGap * 2))
        #expect(announcer.next(for: [("home", syncing)], now: later + .seconds(2)) == .send(line))
        // READY=1 that failed is sent again too.
        var fresh = ServiceAnnouncer()
        let ready = ServiceAnnouncer.Announcement(ready: true, status: "Syncing")
        fresh.sent(ready, delivered: false, at: start)
        #expect(fresh.next(for: [("home", syncing)], now: start + .seconds(60)) == .send(ready))
    }
}
