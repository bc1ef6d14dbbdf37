import Foundation
import Logging
import Replica
import StateDatabase
import SyncEngine
import SystemCalls
import Thumbnails
import TidesyncConfig

/// One domain, running: its lock, state DB, remote store, engine and replica.
public final class DomainService: Sendable {
    public let domain: DomainConfiguration
    public let pass: SyncPass
    let lock: DomainLock
    let store: OpenedStore
    let stop: StopFlag
    let logger: Logger
    let exclude: ExcludeList
    /// What the domain is doing, for status, pause and sync-now.
    public let monitor: DomainMonitor
    /// How remote files come down: whole, or as placeholders hydrated when read.
    let onDemand: FilesOnDemand
    /// The state DB's file, for the file commands' reads of conflicts.
    let databasePath: String

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
    /// `staysRunning` false (`run --once`): no placeholders are made (nothing would hydrate them).
    public init(_ domain: DomainConfiguration, configuration: TidesyncConfiguration, stop: StopFlag,
                allowMassDelete: Bool = false, monitor: DomainMonitor? = nil, staysRunning: Bool = true,
                logger: Logger) throws(ProviderError) {
        var logger = logger
        logger[metadataKey: "domain"] = "\(domain.name)"
        let databasePath = configuration.stateDatabasePath(for: domain)
        let state = try StateDatabase(path: databasePath)
        lock = try DomainLock(path: configuration.stateDirectory + "/" + domain.name + ".lock", domain: domain.name)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: domain.localPath, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ProviderError(.cannotSynchronize, "domain \"\(domain.name)\": the local folder \(domain.localPath) does not exist; create it (mkdir -p \(domain.localPath))")
        }
        store = try RemoteStoreFactory.open(domain, putVerdicts: configuration.stateDirectory + "/" + domain.name + ".put-verdict",
                                            logger: logger)
        let bundles = BundleRule(extensions: domain.bundleExtensions)
        let exclude = ExcludeList(patterns: ExcludeList.defaultPatterns + domain.exclude)
        let provider = SyncProvider(store: store.store, state: state, bundles: bundles)
        let folder = LocalFolder(root: domain.localPath, bundles: bundles)
        let monitor = monitor ?? DomainMonitor(name: domain.name)
        monitor.attach(state)
        let onDemand = FilesOnDemand(domain.placeholders, domain: domain.name, folder: folder, provider: provider,
                                     staysRunning: staysRunning, stored: staysRunning ? StoredGroups.shared : nil, logger: logger)
        monitor.setFilesOnDemand(onDemand.sentence)
        monitor.setHydrations(onDemand.hydrations(root: domain.localPath))
        let runner = PlanRunner(provider: provider, folder: folder, transfers: domain.transfers, logger: logger, stop: stop,
                                observer: monitor, placeholders: onDemand.port)
        self.onDemand = onDemand
        self.databasePath = databasePath
        self.exclude = exclude
        pass = SyncPass(runner: runner, scanner: LocalScanner(root: domain.localPath, exclude: exclude, bundles: bundles),
                        massDelete: allowMassDelete ? nil : MassDeleteGuard(limit: domain.maxDelete),
                        remote: RemoteBinding(domain: domain.name, location: domain.remoteIdentity),
                        release: monitor.deletionRelease, logger: logger)
        self.domain = domain
        self.stop = stop
        self.logger = logger
        self.monitor = monitor
    }

    /// Syncs until stopped: the watcher's settled changes, the remote every
    /// `poll_interval`, a full scan at the start and every `rescan_interval`.
    public func runForever() async {
        await onDemand.start(provider: pass.runner.provider, logger: logger)
        let thumbnails = onDemand.fanotify != nil && domain.placeholders.thumbnails ? await makeThumbnailMaker() : nil
        let files = DomainFiles(domain: domain, folder: pass.runner.folder, provider: pass.runner.provider,
                                onDemand: onDemand, monitor: monitor, databasePath: databasePath, thumbnails: thumbnails)
        monitor.attach(files: files)
        let pinned = Task { [logger] in await files.hydratePinned(logger: logger) }
        let thumbnailing = Task { await thumbnails?.run() }
        defer {
            pinned.cancel()
            monitor.attach(files: nil)
            onDemand.stop(logger: logger)
        }
        let live = LiveSync(pass: pass, timing: LiveSync.Timing(debounce: domain.debounce, pollInterval: domain.pollInterval,
                                                                 rescanInterval: domain.rescanInterval),
                            root: domain.localPath, exclude: exclude, stop: stop, logger: logger, observer: MonitorObserver(monitor: monitor, thumbnails: thumbnails))
        await live.run()
        thumbnailing.cancel()
        await thumbnailing.value
        thumbnails?.writer.finish()
        await onDemand.durable()
    }

    /// The thumbnail maker of this domain, writing into the cache of the local folder's
    /// owner as that owner; nil (with a warning saying why) when that cannot be done.
    private func makeThumbnailMaker() async -> ThumbnailMaker? {
        let refused = { (why: String) -> ThumbnailMaker? in
            self.logger.warning("thumbnails are off: \(why)")
            return nil
        }
        let folderOwner: uid_t
        switch ThumbnailCacheOwner.owner(of: domain.localPath) {
        case .success(let uid): folderOwner = uid
        case .failure(let error): return refused("cannot look at \(domain.localPath): \(String(cString: strerror(error.code.rawValue)))")
        }
        let resolved = ThumbnailCacheOwner.resolve(folderOwner: folderOwner, daemonUID: geteuid(),
                                                   configured: domain.placeholders.thumbnailCache,
                                                   environment: ProcessInfo.processInfo.environment,
                                                   account: ThumbnailCacheOwner.account)
        let owner: ThumbnailCacheOwner
        switch resolved {
        case .success(let found): owner = found
        case .failure(let failure): return refused(failure.message)
        }
        let writer: IdentityThread
        do { writer = try IdentityThread(name: "tidesync thumbnails", identity: owner.identity) } catch { return refused(error.message) }
        if let foreign = await writer.run({ owner.foreignCache() }) ?? "the daemon is stopping" {
            writer.finish()
            return refused(foreign)
        }
        logger.info("thumbnails go to \(owner.root)\(owner.identity.map { ", written as \($0)" } ?? "")")
        return ThumbnailMaker(provider: pass.runner.provider, folder: pass.runner.folder, owner: owner, writer: writer,
                              indexPath: databasePath + ".thumbnails.json", maxWholeFetch: domain.placeholders.thumbnailMaxFetch.bytes,
                              logger: logger)
    }

    /// Closes the remote's connections.
    public func close() async { await store.close() }

    /// Runs passes until one finds nothing to do (at most `maxPasses`). Files held open for
    /// writing are waited for a few seconds (an app may be just closing them); still held,
    /// they are named with the processes holding them.
    public func runOnce(maxPasses: Int = 6) async -> Outcome {
        await onDemand.start(provider: pass.runner.provider, logger: logger)
        defer { onDemand.stop(logger: logger) }
        var last = ""
        var lastFailure: String?
        var heldWaits = 0
        var passes = 0
        while passes < maxPasses {
            passes += 1
            if stop.isStopped { return .unfinished("stopped before both sides agreed") }
            do {
                let result = try await pass.run()
                result.log(to: logger)
                monitor.passFinished(result)  // `status` shows when both sides last agreed
                if let held = result.heldBack.keys.min() {
                    let holders = OpenWriters.describe(at: pass.runner.folder.absolute(held))
                    last = "\(result.heldBack.count) file(s) are still open for writing, such as \(held)"
                        + (holders.map { " (by \($0))" } ?? "") + "; run again when they are closed"
                    // 0.25 + 0.5 + 1 + 2 + 4 s, and these passes do not count.
                    if heldWaits < 5 {
                        logger.info("\(last.prefix { $0 != ";" }); waiting for them")
                        try? await Task.sleep(for: .milliseconds(250 << heldWaits))
                        heldWaits += 1
                        passes -= 1
                    }
                    continue
                }
                if result.steps == 0 || result.report.completes(result.steps) { return .converged }
                if let parked = result.report.parked { return .failed(parked) }
                // A failure seen in an earlier pass is the better message: a step waiting
                // out its back-off is only "skipped" in the passes after it.
                if let failure = result.report.failed.first {
                    lastFailure = "\(failure.path): \(failure.error.message)"
                }
                last = lastFailure ?? "\(result.steps) step(s) were still needed in the last pass"
            } catch {
                return .failed(error)
            }
        }
        return .unfinished(last)
    }
}
