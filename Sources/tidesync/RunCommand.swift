import ArgumentParser
import Daemon
import Dispatch
import Foundation
import Logging
import Replica
import SyncEngine
import TidesyncConfig

#if canImport(Glibc)
import Glibc
#endif

/// `tidesync run`: the daemon. Each domain is reconciled (local scan, remote walk, three-way
/// decision, guarded transfers) every `poll_interval`, until SIGTERM or SIGINT.
struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the sync daemon in the foreground (systemd runs it).",
        discussion: """
            With --once: one full sync (repeated until both sides agree), then exit. \
            Exit status: 0 when every domain is in sync, 1 when a domain could not finish \
            (the error says why), 2 when the configuration cannot be used. \
            SIGTERM or SIGINT: no new transfer starts, running ones finish, then exit 0; \
            a second signal exits at once (interrupted work is journaled and redone).
            """)

    @Option(name: .long, help: "The config file (default: $XDG_CONFIG_HOME/tidesync/config.toml).")
    var config: String?

    @Flag(name: .long, help: "Do one full pass, then exit.")
    var once = false

    @Flag(name: .long, help: "Carry out deletions even when a pass deletes more than max_delete items (or half a domain).")
    var allowMassDelete = false

    func run() async throws {
        let path = config ?? ConfigLoader.defaultPath()
        let configuration: TidesyncConfiguration
        switch ConfigLoader.load(path: path) {
        case .success(let loaded): configuration = loaded
        case .failure(let errors):
            FileHandle.standardError.write(Data((errors.description + "\n").utf8))
            throw ExitCode(2)
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = Logger.Level(rawValue: configuration.logLevel.rawValue) ?? .info
            return handler
        }
        let logger = Logger(label: "tidesync")
        for notice in configuration.notices { logger.notice("\(notice.message)") }
        let stop = StopFlag()
        let signals = Self.handleSignals(stop: stop, logger: logger)
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
        if once {
            failed = await runOnce(services, logger: logger) || failed
        } else if !services.isEmpty {
            await withTaskGroup(of: Void.self) { group in
                for service in services { group.addTask { await service.runForever() } }
            }
            logger.info("stopped")
        }
        for service in services { await service.close() }
        if failed { throw ExitCode(1) }
    }

    /// Runs every domain once; returns true when one did not reach agreement.
    private func runOnce(_ services: [DomainService], logger: Logger) async -> Bool {
        var failed = false
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
        return failed
    }

    /// SIGTERM and SIGINT stop the daemon gracefully; a second one exits at once.
    private static func handleSignals(stop: StopFlag, logger: Logger) -> [any DispatchSourceSignal] {
        [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if stop.isStopped {
                    logger.warning("second signal: exiting now; interrupted work is redone at the next start")
                    Glibc.exit(1)
                }
                logger.info("signal \(number): finishing running transfers, then stopping")
                stop.stop()
            }
            source.resume()
            return source
        }
    }
}
