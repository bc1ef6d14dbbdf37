import Control
import Foundation
import Logging
import Replica
import ServiceLifecycle
import SyncEngine
import SyncModel
import Synchronization
import TidesyncConfig

/// Runs every domain of the configuration until stopped, and swaps domains on reload.
///
/// A domain that cannot be opened (folder missing, server config wrong, locked by another
/// daemon) is shown as an error and opened again after a delay, so the daemon recovers when
/// the cause clears. Isolation: the table of running domains is behind one `Mutex`; each
/// domain runs in its own task with its own `StopFlag`. Nothing here wakes up on a timer:
/// `run` waits for `stop`, and status listeners wait on `statusChanges`.
public final class Supervisor: Sendable {
    /// One domain as the supervisor runs it.
    public struct Running: Sendable {
        public let domain: DomainConfiguration
        public let monitor: DomainMonitor
        let stop: StopFlag
        let task: Task<Void, Never>
    }

    let allowMassDelete: Bool
    let logger: Logger
    private let state: Mutex<Table>
    /// When the supervisor started, for status.
    public let startedAt = Date()
    /// Signalled when a domain's status line may have changed, or a domain started or stopped.
    public let statusChanges = StatusChanges()

    private struct Table {
        var configuration: TidesyncConfiguration
        var running: [String: Running] = [:]
        var lifecycle = Lifecycle.running(waiter: nil)
    }

    private enum Lifecycle {
        /// `waiter` is `run` waiting for `stop`, once it waits.
        case running(waiter: CheckedContinuation<Void, Never>?)
        case stopped
    }

    public init(configuration: TidesyncConfiguration, allowMassDelete: Bool, logger: Logger) {
        self.allowMassDelete = allowMassDelete
        self.logger = logger
        state = Mutex(Table(configuration: configuration))
    }

    /// The configuration in effect.
    public var configuration: TidesyncConfiguration { state.withLock { $0.configuration } }

    /// The running domains, in configuration order.
    public var domains: [Running] {
        state.withLock { table in table.configuration.domains.compactMap { table.running[$0.name] } }
    }

    /// Starts every domain, then returns when `stop()` was called (or, in a `ServiceGroup`,
    /// graceful shutdown began) and every domain ended. Call it once.
    public func run() async {
        // Graceful shutdown (a signal), or the group cancelled because another service ended:
        // either way the domains finish their running transfers and stop.
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await runDomains()
            } onGracefulShutdown: {
                self.stop()
            }
        } onCancel: {
            self.stop()
        }
    }

    private func runDomains() async {
        for domain in configuration.domains { start(domain) }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let stopped = state.withLock { table -> Bool in
                guard case .running = table.lifecycle else { return true }
                table.lifecycle = .running(waiter: continuation)
                return false
            }
            if stopped { continuation.resume() }
        }
        for running in state.withLock({ Array($0.running.values) }) { await running.task.value }
    }

    /// Stops every domain: no new transfer starts, running ones finish.
    public func stop() {
        let (all, waiter) = state.withLock { table -> ([Running], CheckedContinuation<Void, Never>?) in
            var waiter: CheckedContinuation<Void, Never>?
            if case .running(let waiting) = table.lifecycle { waiter = waiting }
            table.lifecycle = .stopped
            return (Array(table.running.values), waiter)
        }
        for running in all { running.stop.stop() }
        waiter?.resume()
    }

    /// Puts `new` in effect: domains removed or changed stop (after their running transfers),
    /// changed and added ones start; unchanged ones go on untouched. Returns what changed, for the log.
    @discardableResult
    public func reload(_ new: TidesyncConfiguration) -> ReloadPlan {
        let (plan, stopping) = state.withLock { table -> (ReloadPlan, [String: Running]) in
            let plan = ReloadPlan(from: table.configuration, to: new)
            table.configuration = new
            var stopping: [String: Running] = [:]
            for name in plan.stopped + plan.restarted { stopping[name] = table.running.removeValue(forKey: name) }
            return (plan, stopping)
        }
        for running in stopping.values { running.stop.stop() }
        statusChanges.signal()
        for domain in new.domains where plan.started.contains(domain.name) || plan.restarted.contains(domain.name) {
            if let old = stopping[domain.name] {
                // The old one holds the domain's lock until its task ends.
                Task { await old.task.value; self.start(domain) }
            } else {
                start(domain)
            }
        }
        return plan
    }

    private func start(_ domain: DomainConfiguration) {
        let stop = StopFlag()
        let monitor = DomainMonitor(name: domain.name, onChange: { [statusChanges] in statusChanges.signal() })
        let started = state.withLock { table -> Bool in
            guard case .running = table.lifecycle else { return false }
            let task = Task { await self.runDomain(domain, monitor: monitor, stop: stop) }
            table.running[domain.name] = Running(domain: domain, monitor: monitor, stop: stop, task: task)
            return true
        }
        if started { statusChanges.signal() }
    }

    /// Opens the domain (again and again while that fails), then runs it until stopped.
    private func runDomain(_ domain: DomainConfiguration, monitor: DomainMonitor, stop: StopFlag) async {
        var failures = 0
        while !stop.isStopped {
            do throws(ProviderError) {
                let service = try DomainService(domain, configuration: configuration, stop: stop,
                                                allowMassDelete: allowMassDelete, monitor: monitor, logger: logger)
                await service.runForever()
                await service.close()
                return
            } catch {
                failures += 1
                let delay = RetryPolicy.parkedDomain.delay(afterFailures: failures)
                monitor.parked(error, retryIn: delay)
                logger.error("domain \"\(domain.name)\": \(error.message); trying again in \(delay.components.seconds) s",
                             metadata: error.underlying.map { ["cause": "\($0)"] } ?? [:])
                await monitor.wait(for: delay, stop: stop)
            }
        }
    }
}

/// In the daemon's `ServiceGroup`, graceful shutdown stops every domain after its running
/// transfers.
extension Supervisor: Service {}

/// What a reload changes, decided from the old and new configuration alone.
public struct ReloadPlan: Sendable, Equatable {
    /// Domains only in the new configuration.
    public var started: [String] = []
    /// Domains only in the old one.
    public var stopped: [String] = []
    /// Domains in both whose settings differ (or whose state directory moved).
    public var restarted: [String] = []
    /// Settings that only take effect at the next start, for the log.
    public var needsRestart: [String] = []

    public init(from old: TidesyncConfiguration, to new: TidesyncConfiguration) {
        let before = Dictionary(old.domains.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let after = Set(new.domains.map(\.name))
        for domain in new.domains {
            guard let previous = before[domain.name] else { started.append(domain.name); continue }
            if previous != domain || old.stateDirectory != new.stateDirectory { restarted.append(domain.name) }
        }
        stopped = old.domains.map(\.name).filter { !after.contains($0) }
        if old.socketPath != new.socketPath { needsRestart.append("socket") }
    }

    public var isEmpty: Bool { started.isEmpty && stopped.isEmpty && restarted.isEmpty }
}
