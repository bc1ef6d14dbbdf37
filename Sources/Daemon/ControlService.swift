import Control
import Foundation
import TidesyncConfig

/// The daemon's answers on the control socket: live state from the supervisor's monitors,
/// the rest from the state DBs (read-only, as `tidesync status` reads them when no daemon runs).
public struct ControlService: ControlResponder {
    let supervisor: Supervisor
    /// The hydrations `hydrate` and `pin` started.
    let jobs = HydrationJobs()

    public init(supervisor: Supervisor) {
        self.supervisor = supervisor
    }

    public func status(domain: String?) throws(ControlFailure) -> StatusReport {
        let configuration = supervisor.configuration
        let monitors = Dictionary(supervisor.domains.map { ($0.domain.name, $0.monitor) }, uniquingKeysWith: { a, _ in a })
        let now = Date()
        let domains = try select(domain, in: configuration).map { domain in
            DomainStatus.assemble(
                domain, live: monitors[domain.name]?.snapshot() ?? DomainMonitor.Snapshot(),
                database: DatabaseFacts.read(path: configuration.stateDatabasePath(for: domain), conflicts: DomainStatus.listed),
                now: now)
        }
        let daemon = DaemonInfo(running: true, pid: Int(ProcessInfo.processInfo.processIdentifier),
                                startedAt: supervisor.startedAt, configFile: configuration.filePath)
        return StatusReport(generatedAt: now, daemon: daemon, domains: domains)
    }

    public func conflicts(domain: String?, limit: Int) throws(ControlFailure) -> ConflictList {
        try ConflictList.read(select(domain, in: supervisor.configuration), configuration: supervisor.configuration, limit: limit)
    }

    public func setPaused(_ paused: Bool, domain: String?) throws(ControlFailure) -> [String] {
        try act(on: domain) { $0.setPaused(paused) }
    }

    public func syncNow(domain: String?) throws(ControlFailure) -> [String] {
        try act(on: domain) { $0.syncNow() }
    }

    public func allowDeletions(domain: String?) throws(ControlFailure) -> [String] {
        let names = try select(domain, in: supervisor.configuration).map(\.name)
        let released = supervisor.domains.filter { names.contains($0.domain.name) && $0.monitor.deletionRelease.release() != nil }
        for running in released { running.monitor.syncNow() }
        return released.map { $0.domain.name }
    }

    private func act(on domain: String?, _ body: (DomainMonitor) -> Void) throws(ControlFailure) -> [String] {
        let names = try select(domain, in: supervisor.configuration).map(\.name)
        let running = supervisor.domains.filter { names.contains($0.domain.name) }
        for domain in running { body(domain.monitor) }
        return running.map(\.domain.name)
    }

    private func select(_ name: String?, in configuration: TidesyncConfiguration) throws(ControlFailure) -> [DomainConfiguration] {
        guard let name else { return configuration.domains }
        guard let domain = configuration.domains.first(where: { $0.name == name }) else {
            let known = configuration.domains.map(\.name).joined(separator: ", ")
            throw ControlFailure(.unknownDomain, "there is no domain \"\(name.prefix(64))\"; the domains are: \(known)")
        }
        return [domain]
    }
}

extension ConflictList {
    /// The `limit` newest conflicts of `domains`, read from their state DBs, newest first.
    public static func read(_ domains: [DomainConfiguration], configuration: TidesyncConfiguration,
                            limit: Int) throws(ControlFailure) -> ConflictList {
        var entries: [ConflictEntry] = []
        for domain in domains {
            let path = configuration.stateDatabasePath(for: domain)
            // A domain that never ran has no state DB, and no conflicts.
            guard FileManager.default.fileExists(atPath: path) else { continue }
            switch DatabaseFacts.read(path: path, conflicts: limit) {
            case .success(let facts): entries += facts.conflicts.map { ConflictEntry($0, domain: domain.name) }
            case .failure(let error): throw ControlFailure(.failed, "domain \"\(domain.name)\": \(error.message)")
            }
        }
        return ConflictList(conflicts: Array(entries.sorted { $0.detectedAt > $1.detectedAt }.prefix(limit)))
    }
}
