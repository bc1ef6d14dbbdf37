import ArgumentParser
import Control
import Daemon
import Foundation
import TidesyncConfig

import Glibc

/// `tidesync status`: what the daemon is doing, per domain; from the state DBs when it is not running.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what the daemon is doing: state, transfers, pending items, errors, conflicts.",
        discussion: """
            Asks the running daemon over its control socket. When no daemon runs, reads the state \
            databases read-only and says so. --json prints the same as JSON, schema version 1 \
            (packaging/schema/status-schema.md; fields are only ever added).

            Exit status: 0 every domain idle and in sync; 1 a domain is starting, syncing, paused, \
            or has pending items or items in error; 2 a domain is in error (server unreachable, \
            not authenticated, quota, disk full, folder missing, …); 3 the daemon is not running; \
            4 no answer could be had (bad configuration, socket of another user).
            """)

    @OptionGroup var options: DaemonOptions

    @Flag(name: .long, help: "Print JSON (schema version 1) instead of the screen.")
    var json = false

    @Flag(name: .long, help: "Refresh in place every --interval seconds until interrupted (with --json: one JSON document per line).")
    var watch = false

    @Option(name: .long, help: ArgumentHelp("Seconds between refreshes with --watch.", valueName: "seconds"))
    var interval: Double = 1

    @Option(name: .long, help: ArgumentHelp("Only this domain.", valueName: "name"))
    var domain: String?

    func validate() throws {
        guard interval >= 0.1, interval <= 3600 else { throw ValidationError("--interval must be between 0.1 and 3600 seconds") }
    }

    func run() throws {
        let configuration = try? options.loadConfiguration().get()
        guard let socket = options.socketPath(configuration) else {
            if case .failure(let errors) = options.loadConfiguration() { printError(errors.description) }
            throw ExitCode(DaemonExit.cannotAsk)
        }
        var code: Int32 = 0
        repeat {
            let outcome = report(socket: socket, configuration: configuration)
            switch outcome {
            case .success(let report):
                show(report)
                code = report.exitCode
            case .failure(let message):
                if watch { show(message: message.message) } else { printError("tidesync status: " + message.message) }
                code = DaemonExit.cannotAsk
            }
            if watch { Thread.sleep(forTimeInterval: interval) }
        } while watch
        if code != 0 { throw ExitCode(code) }
    }

    /// The report from the daemon, or from the state DBs when it is not running.
    private func report(socket: String, configuration: TidesyncConfiguration?) -> Result<StatusReport, StatusFailure> {
        switch ControlClient.send(ControlRequest(.status, domain: domain), to: socket) {
        case .success(let answer):
            if let status = answer.status { return .success(status) }
            return .failure(StatusFailure(answer.error?.message ?? "the daemon sent no status"))
        case .failure(.notRunning):
            guard let configuration else {
                return .success(StatusReport(generatedAt: Date(), daemon: DaemonInfo(running: false), domains: []))
            }
            return offline(configuration)
        case .failure(let failure):
            return .failure(StatusFailure(failure.message))
        }
    }

    private func offline(_ configuration: TidesyncConfiguration) -> Result<StatusReport, StatusFailure> {
        let domains = configuration.domains.filter { domain == nil || $0.name == domain }
        if let domain, domains.isEmpty { return .failure(StatusFailure("there is no domain \"\(domain)\" in \(configuration.filePath)")) }
        let now = Date()
        let statuses = domains.map {
            DomainStatus.assemble($0, live: nil, database: DatabaseFacts.read(path: configuration.stateDatabasePath(for: $0),
                                                                              conflicts: DomainStatus.listed), now: now)
        }
        return .success(StatusReport(generatedAt: now, daemon: DaemonInfo(running: false, configFile: configuration.filePath),
                                     domains: statuses))
    }

    private func show(_ report: StatusReport) {
        if json {
            let data = (try? ControlJSON.encoder(pretty: !watch).encode(report)) ?? Data()
            emit(String(decoding: data, as: UTF8.self) + "\n")
        } else {
            show(message: StatusScreen.render(report, now: Date()))
        }
    }

    private func show(message: String) {
        // In a terminal, --watch redraws the screen in place; in a pipe, screens are separated by a blank line.
        let inTerminal = isatty(1) != 0
        let clear = watch && !json && inTerminal ? "\u{1B}[H\u{1B}[2J" : ""
        emit(clear + message + "\n" + (watch && !inTerminal ? "\n" : ""))
    }

    /// Writes `text` to standard output at once (unbuffered, so --watch shows each refresh).
    private func emit(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}

/// Why status could not be had, as a sentence.
struct StatusFailure: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
