import Control
@testable import Daemon
import Foundation
import Logging
@testable import Replica
import StateDatabase
import SyncEngine
import SyncModel
import Synchronization
import Testing
import TestSupport
import TidesyncConfig

#if canImport(Glibc)
import Glibc
#endif

@Suite struct DomainStatusAssemblyTests {
    let domain = DomainConfiguration(name: "home", localPath: "/home/a/Cloud",
                                     remote: .webDAV(URL(string: "https://cloud.example.com/dav/")!))
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let noDatabase: Result<DatabaseFacts, ProviderError> = .failure(ProviderError(.cannotSynchronize, "no DB"))

    func path(_ text: String) -> RemotePath { try! RemotePath(string: text) }

    @Test func aParkedDomainShowsItsErrorAndNextRetry() {
        var live = DomainMonitor.Snapshot()
        live.phase = .parked(ProviderError(.serverUnreachable, "cannot reach cloud.example.com"),
                             since: now.addingTimeInterval(-60), retryAt: now.addingTimeInterval(20))
        let status = DomainStatus.assemble(domain, live: live, database: noDatabase, now: now)
        #expect(status.state == .error)
        #expect(status.error == ErrorInfo(code: "serverUnreachable", message: "cannot reach cloud.example.com",
                                          since: now.addingTimeInterval(-60), nextRetry: now.addingTimeInterval(20)))
        #expect(status.remote == "https://cloud.example.com/dav/")
        let screen = StatusScreen.render(StatusReport(generatedAt: now, daemon: DaemonInfo(running: true), domains: [status]),
                                         now: now, timeZone: TimeZone(identifier: "UTC")!)
        #expect(screen.contains("home: ERROR: server unreachable"))
        #expect(screen.contains("next retry: 08:00:20 (in 20 s)"))
    }

    @Test func heldDeletionsAndAUserPauseShowAsPaused() {
        var live = DomainMonitor.Snapshot()
        live.phase = .parked(ProviderError(.massDeletePaused, "deletions are paused"), since: now, retryAt: now)
        #expect(DomainStatus.assemble(domain, live: live, database: noDatabase, now: now).paused?.by == "massDelete")
        live.phase = .idle
        live.paused = true
        let status = DomainStatus.assemble(domain, live: live, database: noDatabase, now: now)
        #expect(status.state == .paused)
        #expect(status.paused?.by == "user")
    }

    @Test func heldDeletionsSayHowManyOnWhichSideAndHowToReleaseThem() throws {
        var live = DomainMonitor.Snapshot()
        live.phase = .parked(ProviderError(.massDeletePaused, "the server's folder is empty"), since: now, retryAt: now)
        live.held = DeletionHold(reason: .sideEmptied, side: .local, items: 20, steps: [0])
        let status = DomainStatus.assemble(domain, live: live, database: noDatabase, now: now)
        #expect(status.heldDeletions == HeldDeletions(reason: "sideEmptied", side: "local", items: 20,
                                                      release: "tidesync allow-deletions home"))
        let screen = StatusScreen.render(StatusReport(generatedAt: now, daemon: DaemonInfo(running: true), domains: [status]),
                                         now: now, timeZone: TimeZone(identifier: "UTC")!)
        #expect(screen.contains("held: 20 deletion(s) in the sync folder (the server's folder is empty); to carry them out run `tidesync allow-deletions home`"))
        let json = String(decoding: try ControlJSON.encoder().encode(status), as: UTF8.self)
        #expect(json.contains(#""heldDeletions":{"items":20,"reason":"sideEmptied","release":"tidesync allow-deletions home","side":"local"}"#))
    }

    @Test func aMergeAfterARepointedRemoteIsShownUntilAPassAgrees() {
        let monitor = DomainMonitor(name: "home")
        let change = RemoteChange(from: RemoteIdentity(location: "https://a/"), to: RemoteIdentity(location: "https://b/"))
        var merged = PassResult(steps: 3, report: RunReport(), skippedNames: [])
        merged.report.succeeded = 3
        merged.remoteChange = change
        monitor.passFinished(merged, now: now)
        let shown = DomainStatus.assemble(domain, live: monitor.snapshot(), database: noDatabase, now: now).remoteChanged
        #expect(shown == "the remote of domain home changed from https://a/ to https://b/: merging both trees as a first sync; nothing is deleted")
        monitor.passFinished(PassResult(steps: 0, report: RunReport(), skippedNames: []), now: now)
        #expect(DomainStatus.assemble(domain, live: monitor.snapshot(), database: noDatabase, now: now).remoteChanged == nil)
    }

    @Test func aWatchedPassReplacesOnlyTheNameTwinsOfTheFoldersItSaw() throws {
        let monitor = DomainMonitor(name: "home")
        let twins = try ["a/caf\u{E9}", "a/cafe\u{301}", "b/\u{C5}", "b/A\u{30A}"].map { try RemotePath(string: $0) }
        var full = PassResult(steps: 0, report: RunReport(), skippedNames: [])
        full.normalisationTwins = [[twins[0], twins[1]], [twins[2], twins[3]]]
        monitor.passFinished(full, now: now)
        // A watched pass in folder a (one twin renamed away): b's twins are not forgotten.
        var watched = PassResult(steps: 1, report: RunReport(), skippedNames: [])
        watched.report.succeeded = 1
        watched.twinsScope = [try RemotePath(string: "a")]
        monitor.passFinished(watched, now: now)
        #expect(monitor.snapshot().normalisationTwins == [[twins[2], twins[3]]])
        // One that saw b's twins again (read as the folders above what settled) lists them once.
        watched.normalisationTwins = [[twins[2], twins[3]]]
        monitor.passFinished(watched, now: now)
        #expect(monitor.snapshot().normalisationTwins == [[twins[2], twins[3]]])
        // A full pass replaces the list.
        monitor.passFinished(PassResult(steps: 0, report: RunReport(), skippedNames: []), now: now)
        #expect(monitor.snapshot().normalisationTwins.isEmpty)
    }

    @Test func transfersShowRateAndTimeLeftAndPendingStepsWhyTheyWait() {
        var live = DomainMonitor.Snapshot()
        live.phase = .syncing
        live.pending = [
            DomainMonitor.PendingStep(step: PlannedStep(path: path("big.bin"), step: "upload", direction: .upload, bytes: 300),
                                      since: now.addingTimeInterval(-20), running: true, bytesDone: 100, bytesTotal: 300,
                                      transferStartedAt: now.addingTimeInterval(-10)),
            DomainMonitor.PendingStep(step: PlannedStep(path: path("a.txt"), step: "delete-remote"),
                                      since: now.addingTimeInterval(-20), running: false, bytesDone: 0, bytesTotal: nil,
                                      transferStartedAt: nil),
        ]
        let status = DomainStatus.assemble(domain, live: live, database: noDatabase, now: now)
        #expect(status.transfers == [Transfer(path: "big.bin", direction: "upload", bytesDone: 100, bytesTotal: 300,
                                              bytesPerSecond: 10, secondsLeft: 20, startedAt: now.addingTimeInterval(-10))])
        #expect(status.pending.count == 2)
        #expect(status.pending.oldest.map(\.reason) == ["queued", "running"])
    }

    @Test func withoutTheDaemonTheDatabaseSpeaks() {
        var summary = DomainSummary()
        summary.files = 3
        summary.lastCompleteSync = now
        let failure = PendingOperation(itemID: nil, kind: "upload",
                                       payload: Data(#"{"step":"upload","path":{"components":["x.txt"]}}"#.utf8),
                                       createdAt: now, attempts: 2, notBefore: now.addingTimeInterval(40), lastError: "HTTP 500")
        let facts = DatabaseFacts(summary: summary, failures: [failure], conflicts: [])
        let status = DomainStatus.assemble(domain, live: nil, database: .success(facts), now: now)
        #expect(status.state == .notRunning)
        #expect(status.counts.files == 3)
        #expect(status.lastCompleteSync == now)
        #expect(status.itemsInError == [ItemInError(path: "x.txt", step: "upload", attempts: 2, lastError: "HTTP 500",
                                                    nextRetry: now.addingTimeInterval(40))])
    }

    /// Placeholders are counted where files on demand runs, or where the state DB still
    /// records some (the daemon stopped, or switched off and downloading them); hydrations in
    /// flight come from the running daemon only.
    @Test func placeholdersAreCountedWhereFilesOnDemandRunsOrPlaceholdersAreLeft() {
        var summary = DomainSummary()
        (summary.files, summary.dataless, summary.partial) = (4, 2, 1)
        let facts = DatabaseFacts(summary: summary, failures: [], conflicts: [])
        var live = DomainMonitor.Snapshot()
        live.hydrating = true
        let reader = HydrationStatus(program: "dd", pid: 77, path: "a.bin", bytes: 65_536, at: now)
        live.hydrationsInFlight = [reader]
        let running = DomainStatus.assemble(domain, live: live, database: .success(facts), now: now)
        #expect(running.placeholders == PlaceholderCounts(dataless: 2, partial: 1))
        #expect(running.hydrationsInFlight == [reader])
        let stopped = DomainStatus.assemble(domain, live: nil, database: .success(facts), now: now)
        #expect(stopped.placeholders == PlaceholderCounts(dataless: 2, partial: 1) && stopped.hydrationsInFlight == nil)
        let none = DomainStatus.assemble(domain, live: DomainMonitor.Snapshot(), database: .success(DatabaseFacts(
            summary: DomainSummary(), failures: [], conflicts: [])), now: now)
        #expect(none.placeholders == nil, "a domain without files on demand shows placeholders")
        live.hydrationsInFlight = []
        let idle = DomainStatus.assemble(domain, live: live, database: .success(DatabaseFacts(
            summary: DomainSummary(), failures: [], conflicts: [])), now: now)
        #expect(idle.placeholders == PlaceholderCounts(dataless: 0, partial: 0) && idle.hydrationsInFlight == nil)
    }
}

/// The daemon's service parts, in process: the status line systemd shows, journal lines, the
/// sd_notify notifier and the reload plan. (The real daemon as a service is `ServiceTests`.)
@Suite("service parts: status line, journal lines, notifier, reload plan")
struct ServicePartsTests {
    func snapshot(_ phase: DomainMonitor.Phase, pending: [PlannedStep] = []) -> DomainMonitor.Snapshot {
        var snapshot = DomainMonitor.Snapshot()
        snapshot.phase = phase
        snapshot.pending = pending.map {
            DomainMonitor.PendingStep(step: $0, since: Date(), running: false, bytesDone: 0, bytesTotal: nil, transferStartedAt: nil)
        }
        return snapshot
    }

    @Test func theStatusLineNamesWhatIsHappening() throws {
        let upload = PlannedStep(path: try RemotePath(string: "a"), step: "upload", direction: .upload)
        #expect(ServiceStatusLine.text(for: [("home", snapshot(.idle))]) == "Synced")
        #expect(ServiceStatusLine.text(for: [("home", snapshot(.syncing, pending: [upload, upload, upload]))]) == "Uploading 3 files")
        let parked = snapshot(.parked(ProviderError(.serverUnreachable, "x"), since: Date(), retryAt: Date()))
        #expect(ServiceStatusLine.text(for: [("home", parked)]) == "Paused: server unreachable")
        #expect(ServiceStatusLine.text(for: [("home", snapshot(.idle)), ("work", parked)]) == "work: Paused: server unreachable")
    }

    @Test func journalLinesHaveAPriorityAndNoTimestamp() {
        let line = DaemonLogHandler.format(level: .warning, message: "hello", metadata: ["domain": "home"],
                                           toJournal: true, now: Date())
        #expect(line == "<4>[domain=home] hello\n")
        let terminal = DaemonLogHandler.format(level: .info, message: "hello", metadata: [:], toJournal: false, now: Date())
        #expect(terminal.hasSuffix(" info tidesync: hello\n"))
        #expect(!DaemonLogHandler.stderrIsJournal(environment: ["JOURNAL_STREAM": "1:2"]))
    }

    @Test(arguments: [false, true])
    func theNotifierReachesPathAndAbstractSockets(abstract: Bool) throws {
        let name = abstract ? "@tidesync-test-\(UUID().uuidString.prefix(8))"
            : temporaryPath("tidesync-notify-", short: true)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd); if !abstract { unlink(name) } }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(name.utf8)
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + (abstract ? 0 : 1))
        #expect(withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } } == 0)
        #expect(ServiceNotifier(environment: ["NOTIFY_SOCKET": name]).send("READY=1\nSTATUS=Synced"))
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        #expect(count > 0)
        #expect(String(decoding: buffer.prefix(max(0, count)), as: UTF8.self) == "READY=1\nSTATUS=Synced")
        #expect(!ServiceNotifier(environment: [:]).send("READY=1"))
    }

    /// A daemon stopping under a test's notify socket, which nobody read while it waited
    /// for the stop, hung in sendmsg for ever (a fresh-clone run).
    @Test func aReceiverThatDoesNotReadHoldsNoMessageLongerThanTheTimeout() async throws {
        let name = "@tidesync-test-\(UUID().uuidString.prefix(8))"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(name.utf8)
        bytes[0] = 0
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count)
        #expect(withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } } == 0)
        // Never read: the queue fills (10 datagrams by default), then each send gives up.
        let notifier = ServiceNotifier(environment: ["NOTIFY_SOCKET": name])
        let sends = 15
        let results = Mutex<[Bool]>([])
        let thread = Thread {
            for index in 0..<sends {
                let sent = notifier.send("STATUS=\(index)")
                results.withLock { $0.append(sent) }
            }
        }
        thread.start()
        try await eventually("every send returned", timeout: .seconds(60)) { results.withLock { $0.count } == sends }
        #expect(results.withLock { $0.prefix(5).allSatisfy { $0 } }, "the first messages fit")
        #expect(results.withLock { $0.contains(false) }, "a full queue refuses a message")
    }

    @Test func aReloadRestartsOnlyWhatChanged() {
        func config(_ domains: [DomainConfiguration], socket: String = "/run/s") -> TidesyncConfiguration {
            TidesyncConfiguration(filePath: "/c", logLevel: .info, socketPath: socket, stateDirectory: "/s", domains: domains, notices: [])
        }
        let home = DomainConfiguration(name: "home", localPath: "/h", remote: .localDirectory("/r"))
        var homeFaster = home
        homeFaster.pollInterval = .seconds(5)
        let work = DomainConfiguration(name: "work", localPath: "/w", remote: .localDirectory("/r2"))
        let archive = DomainConfiguration(name: "archive", localPath: "/a", remote: .localDirectory("/r3"))
        let plan = ReloadPlan(from: config([home, work]), to: config([homeFaster, archive], socket: "/run/t"))
        #expect(plan.started == ["archive"])
        #expect(plan.stopped == ["work"])
        #expect(plan.restarted == ["home"])
        #expect(plan.needsRestart == ["socket"])
        #expect(ReloadPlan(from: config([home]), to: config([home])).isEmpty)
    }
}
