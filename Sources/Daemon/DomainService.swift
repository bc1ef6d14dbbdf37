import Foundation
import Logging
import Replica
import StateDatabase
import SyncEngine
import TidesyncConfig

/// One domain, running: its lock, state DB, remote store, engine and replica.
public final class DomainService: Sendable {
    public let domain: DomainConfiguration
    public let pass: SyncPass
    let lock: DomainLock
    let store: OpenedStore
    let stop: StopFlag
    let logger: Logger
    /// What the domain is doing, for status, pause and sync-now (issue 6).
    public let monitor: DomainMonitor

    /// How one `--once` run ended.
    public enum Outcome: Sendable, Equatable {
        /// Both sides agree.
        case converged
        /// Work is left (items in error, or the run was stopped); the message says what.
        case unfinished(String)
        /// The domain cannot sync now (folder missing, server unreachable, …).
        case failed(ProviderError)
    }

    /// Opens `domain`: takes its lock, opens (and migrates) its state DB, checks its folder,
    /// opens its remote. Throws a `ProviderError` whose message says what to fix.
    public init(_ domain: DomainConfiguration, configuration: TidesyncConfiguration, stop: StopFlag,
                allowMassDelete: Bool = false, monitor: DomainMonitor? = nil, logger: Logger) throws(ProviderError) {
        var logger = logger
        logger[metadataKey: "domain"] = "\(domain.name)"
        let databasePath = configuration.stateDatabasePath(for: domain)
        let state = try StateDatabase(path: databasePath)
        lock = try DomainLock(path: configuration.stateDirectory + "/" + domain.name + ".lock", domain: domain.name)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: domain.localPath, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ProviderError(.cannotSynchronize, "domain \"\(domain.name)\": the local folder \(domain.localPath) does not exist; create it (mkdir -p \(domain.localPath))")
        }
        store = try RemoteStoreFactory.open(domain, logger: logger)
        let provider = SyncProvider(store: store.store, state: state)
        let folder = LocalFolder(root: domain.localPath)
        let monitor = monitor ?? DomainMonitor(name: domain.name)
        monitor.attach(state)
        let runner = PlanRunner(provider: provider, folder: folder, transfers: domain.transfers, logger: logger, stop: stop,
                                observer: monitor)
        let exclude = ExcludeList(patterns: ExcludeList.defaultPatterns + domain.exclude)
        pass = SyncPass(runner: runner, scanner: LocalScanner(root: domain.localPath, exclude: exclude),
                        massDelete: allowMassDelete ? nil : MassDeleteGuard(limit: domain.maxDelete), logger: logger)
        self.domain = domain
        self.stop = stop
        self.logger = logger
        self.monitor = monitor
    }

    /// Closes the remote's connections.
    public func close() async { await store.close() }

    /// Runs passes until one finds nothing to do (at most `maxPasses`).
    public func runOnce(maxPasses: Int = 6) async -> Outcome {
        var last = ""
        for _ in 0..<maxPasses {
            if stop.isStopped { return .unfinished("stopped before both sides agreed") }
            do {
                let result = try await pass.run()
                report(result)
                if result.steps == 0 || result.report.completes(result.steps) { return .converged }
                if let parked = result.report.parked { return .failed(parked) }
                last = result.report.failed.first.map { "\($0.path): \($0.error.message)" }
                    ?? "\(result.steps) step(s) were still needed in the last pass"
            } catch {
                return .failed(error)
            }
        }
        return .unfinished(last)
    }

    /// Runs passes every `poll_interval` until stopped. A pass that did work is followed
    /// at once by another (which confirms both sides agree); a parked domain waits and
    /// tries again.
    public func runForever() async {
        var parkedFor = 0
        while !stop.isStopped {
            if await monitor.holdWhilePaused(stop) { continue }
            var again = false
            do throws(ProviderError) {
                monitor.passStarted()
                let result = try await pass.run()
                report(result)
                monitor.passFinished(result)
                if let parked = result.report.parked { throw parked }
                again = result.steps > 0 && result.report.succeeded > 0 && !result.report.completes(result.steps)
                parkedFor = 0
            } catch {
                parkedFor += 1
                monitor.parked(error, retryIn: retryDelay(parkedFor))
                logger.error("\(error.message); trying again in \(Int(retryDelay(parkedFor).components.seconds)) s",
                             metadata: error.underlying.map { ["cause": "\($0)"] } ?? [:])
                await monitor.wait(for: retryDelay(parkedFor), stop: stop)
                continue
            }
            if !again { await monitor.wait(for: domain.pollInterval, stop: stop) }
        }
    }

    func retryDelay(_ failures: Int) -> Duration {
        min(domain.pollInterval, .seconds(min(300, 5 << min(failures - 1, 6))))
    }

    private func report(_ result: PassResult) {
        for skipped in result.skippedNames { logger.warning("not synced: \(skipped.path): \(skipped.reason)") }
        guard result.steps > 0 else { return }
        let r = result.report
        logger.info("pass done: \(r.succeeded) step(s) done, \(r.failed.count) failed, \(r.skipped) left for later, \(r.conflicts.count) conflict copies")
    }
}
