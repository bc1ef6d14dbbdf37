import ArgumentParser
import Control
import Daemon
import Dispatch
import Foundation
import Logging
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
                                                  allowMassDelete: allowMassDelete, logger: logger))
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
        var signals = Self.handleStopSignals(logger: logger) {
            notifier.send("STOPPING=1")
            supervisor.stop()
        }
        signals.append(Self.handleReload(path: path, cliLevel: logLevel, level: level, supervisor: supervisor,
                                         notifier: notifier, logger: logger))
        defer { signals.forEach { $0.cancel() } }
        logger.info("started: \(configuration.domains.count) domain(s); control socket \(configuration.socketPath)")
        let reporting = Task { await Self.report(supervisor, to: notifier) }
        await supervisor.run()
        reporting.cancel()
        server.stop()
        logger.info("stopped")
    }

    /// Sends READY=1 once every domain has finished its first scan, and a STATUS= line when
    /// it changes (at most one message a second), until cancelled. It looks only when the
    /// supervisor signals a change: an idle daemon sends nothing and wakes for nothing.
    private static func report(_ supervisor: Supervisor, to notifier: ServiceNotifier) async {
        guard notifier.socketName != nil else { return }
        var announcer = ServiceAnnouncer()
        for await _ in supervisor.statusChanges.stream() {
            await announce(supervisor, to: notifier, &announcer)
        }
    }

    /// Sends what is new until the service manager knows it all (waiting out the rate limit
    /// or a failed send's retry delay; changes meanwhile are included).
    private static func announce(_ supervisor: Supervisor, to notifier: ServiceNotifier,
                                 _ announcer: inout ServiceAnnouncer) async {
        while !Task.isCancelled {
            let domains = supervisor.domains.map { (name: $0.domain.name, snapshot: $0.monitor.snapshot()) }
            switch announcer.next(for: domains, now: .now) {
            case .nothing:
                return
            case .wait(let instant):
                try? await Task.sleep(until: instant, clock: .continuous)
            case .send(let announcement):
                announcer.sent(announcement, delivered: notifier.send(announcement.text), at: .now)
            }
        }
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
