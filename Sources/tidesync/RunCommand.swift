import ArgumentParser
import Control
import Daemon
import Dispatch
import Foundation
import Logging
import ServiceLifecycle
import Replica
import SyncEngine
import TidesyncConfig

import Glibc

/// `tidesync run`: the daemon. Each domain is reconciled (local scan, remote walk, three-way
/// decision, guarded transfers) every `poll_interval`, until SIGTERM or SIGINT.
struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the sync daemon in the foreground (systemd runs it).",
        discussion: """
            With --once: one full sync (repeated until both sides agree), then exit. \
            Exit status: 0 when every domain is in sync (without --once: after SIGTERM), 1 when a \
            domain could not finish or the control socket cannot be used (the error says why), \
            2 when the configuration cannot be used. \
            SIGTERM or SIGINT: no new transfer starts, running ones finish, then exit 0; \
            a second signal exits at once (interrupted work is journaled and redone). \
            SIGHUP: read the configuration again; a bad one is reported and the old one kept. \
            Under systemd (Type=notify) the daemon sends READY=1 once every domain's first scan \
            is done, and a STATUS= line as it works.
            """)

    @Option(name: .long, help: "The config file (default: $XDG_CONFIG_HOME/tidesync/config.toml).")
    var config: String?

    @Flag(name: .long, help: "Do one full pass, then exit.")
    var once = false

    @Flag(name: .long, help: "Carry out deletions even when a pass deletes more than max_delete items (or half a domain).")
    var allowMassDelete = false

    @Option(name: .long, help: ArgumentHelp("How much to log: trace, debug, info, notice, warning, error or critical (default: the config's log_level, else info).", valueName: "level"))
    var logLevel: LogLevel?

    func run() async throws {
        let path = config ?? ConfigLoader.defaultPath()
        let configuration: TidesyncConfiguration
        switch ConfigLoader.load(path: path) {
        case .success(let loaded): configuration = loaded
        case .failure(let errors):
            FileHandle.standardError.write(Data((errors.description + "\n").utf8))
            throw ExitCode(2)
        }
        let level = LogLevelSetting(Self.level(logLevel ?? configuration.logLevel))
        let toJournal = DaemonLogHandler.stderrIsJournal()
        LoggingSystem.bootstrap { label in DaemonLogHandler(label: label, setting: level, toJournal: toJournal) }
        let logger = Logger(label: "tidesync")
        for notice in configuration.notices { logger.notice("\(notice.message)") }
        if once {
            try await runOnce(configuration, logger: logger)
        } else {
            try await runDaemon(configuration, path: path, level: level, logger: logger)
        }
    }

    static func level(_ level: LogLevel) -> Logger.Level {
        Logger.Level(rawValue: level.rawValue) ?? .info
    }

    // MARK: --once

    private func runOnce(_ configuration: TidesyncConfiguration, logger: Logger) async throws {
        let stop = StopFlag()
        let signals = Self.handleStopSignals(logger: logger) { stop.stop() }
        defer { signals.forEach { $0.cancel() } }
        var services: [DomainService] = []
        var failed = false
        for domain in configuration.domains {
            do {
                services.append(try DomainService(domain, configuration: configuration, stop: stop,
                                                  allowMassDelete: allowMassDelete, staysRunning: false, logger: logger))
            } catch {
                logger.error("\(error.message)", metadata: error.underlying.map { ["cause": "\($0)"] } ?? [:])
                failed = true
            }
        }
        for service in services {
            switch await service.runOnce() {
            case .converged:
                logger.info("domain \"\(service.domain.name)\": both sides agree")
            case .unfinished(let why):
                logger.error("domain \"\(service.domain.name)\" is not in sync yet: \(why)")
                failed = true
            case .failed(let error):
                logger.error("domain \"\(service.domain.name)\": \(error.message)",
                             metadata: error.underlying.map { ["cause": "\($0)"] } ?? [:])
                failed = true
            }
        }
        for service in services { await service.close() }
        if failed { throw ExitCode(1) }
    }

    // MARK: The daemon

    private func runDaemon(_ configuration: TidesyncConfiguration, path: String, level: LogLevelSetting,
                           logger: Logger) async throws {
        // First: the fanotify groups systemd kept are made close-on-exec before any child starts.
        StoredGroups.takeOver(for: configuration, logger: logger)
        let supervisor = Supervisor(configuration: configuration, allowMassDelete: allowMassDelete, logger: logger)
        let server: ControlServer
        do {
            server = try ControlServer(path: configuration.socketPath, responder: ControlService(supervisor: supervisor),
                                       logger: logger)
        } catch {
            logger.critical("\(error.message)")
            throw ExitCode(1)
        }
        let notifier = ServiceNotifier()
        // The ServiceGroup stops the daemon on the first SIGTERM or SIGINT; this only logs it
        // and makes a second one exit at once.
        let signals = Self.handleStopSignals(logger: logger) {}
            + [Self.handleReload(path: path, cliLevel: logLevel, level: level, supervisor: supervisor,
                                 notifier: notifier, logger: logger)]
        defer { signals.forEach { $0.cancel() } }
        logger.info("started: \(configuration.domains.count) domain(s); control socket \(configuration.socketPath)")
        // Shut down in reverse: reports (STOPPING=1), then the domains, then the socket.
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [.init(service: ControlSocketService(server: server)), .init(service: supervisor),
                       .init(service: ServiceManagerReports(supervisor: supervisor, notifier: notifier))],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do { try await group.run() } catch {
            logger.error("a service of the daemon failed: \(error)")
            server.stop()
            throw ExitCode(1)
        }
        logger.info("stopped")
    }

    /// SIGTERM and SIGINT call `stop`; a second one exits at once.
    private static func handleStopSignals(logger: Logger, stop: @escaping @Sendable () -> Void) -> [any DispatchSourceSignal] {
        let stopped = StopFlag()
        return [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if stopped.isStopped {
                    logger.warning("second signal: exiting now; interrupted work is redone at the next start")
                    Glibc.exit(1)
                }
                logger.info("signal \(number): finishing running transfers, then stopping")
                stopped.stop()
                stop()
            }
            source.resume()
            return source
        }
    }

    /// SIGHUP reads the configuration again. A bad file is reported and the old one kept.
    private static func handleReload(path: String, cliLevel: LogLevel?, level: LogLevelSetting, supervisor: Supervisor,
                                     notifier: ServiceNotifier, logger: Logger) -> any DispatchSourceSignal {
        signal(SIGHUP, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        source.setEventHandler {
            logger.info("SIGHUP: reading the configuration \(path) again")
            switch ConfigLoader.load(path: path) {
            case .failure(let errors):
                logger.error("the configuration was not reloaded, the old one stays in effect; fix these and send SIGHUP again (systemctl --user reload tidesync):\n\(errors.description)")
            case .success(let new):
                level.set(Run.level(cliLevel ?? new.logLevel))
                let plan = supervisor.reload(new)
                for notice in new.notices { logger.notice("\(notice.message)") }
                logger.info(plan.isEmpty ? "configuration reloaded; no domain changed"
                            : "configuration reloaded; started: \(plan.started), stopped: \(plan.stopped), restarted: \(plan.restarted)")
                if plan.needsRestart.contains("socket") {
                    logger.warning("the control socket stays \(supervisor.configuration.socketPath) until the daemon restarts")
                }
            }
        }
        source.resume()
        return source
    }
}

extension LogLevel: ExpressibleByArgument {}
