import ArgumentParser
import Control
import Daemon
import Foundation
import TidesyncConfig

/// `tidesync conflicts`: the conflict copies recorded, newest first.
struct Conflicts: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the conflicts recorded: original path, conflict copy, when, both versions.",
        discussion: """
            When a file changed on both sides, the server's version keeps the name and this \
            machine's version is kept beside it as "NAME (conflicted copy DATE HOST).EXT", on both \
            sides. Works whether or not the daemon runs. Exit status: 0 listed (maybe none), \
            4 the configuration or a state database cannot be read.
            """)

    @OptionGroup var options: DaemonOptions

    @Flag(name: .long, help: "Print JSON (schema version 1).")
    var json = false

    @Option(name: .long, help: ArgumentHelp("Only this domain.", valueName: "name"))
    var domain: String?

    @Option(name: .long, help: ArgumentHelp("At most this many, newest first.", valueName: "count"))
    var limit: Int = 100

    func run() throws {
        let loaded = options.loadConfiguration()
        let configuration = try? loaded.get()
        let list: ConflictList
        switch ask(configuration) {
        case .success(let answer): list = answer
        case .failure(let failure):
            if configuration == nil, case .failure(let errors) = loaded { printError(errors.description) }
            printError("tidesync conflicts: " + failure.message)
            throw ExitCode(DaemonExit.cannotAsk)
        }
        if json {
            print(String(decoding: (try? ControlJSON.encoder(pretty: true).encode(list)) ?? Data(), as: UTF8.self))
            return
        }
        if list.conflicts.isEmpty { print("No conflicts recorded."); return }
        for entry in list.conflicts { print(Self.describe(entry)) }
    }

    /// From the daemon when it runs, else from the state DBs.
    private func ask(_ configuration: TidesyncConfiguration?) -> Result<ConflictList, StatusFailure> {
        if let socket = options.socketPath(configuration) {
            switch ControlClient.send(ControlRequest(.conflicts, domain: domain, limit: limit), to: socket) {
            case .success(let answer):
                if let conflicts = answer.conflicts { return .success(conflicts) }
                return .failure(StatusFailure(answer.error?.message ?? "the daemon sent no conflict list"))
            case .failure(.notRunning): break
            case .failure(let failure): return .failure(StatusFailure(failure.message))
            }
        }
        guard let configuration else { return .failure(StatusFailure("the configuration cannot be read")) }
        let domains = configuration.domains.filter { domain == nil || $0.name == domain }
        if let domain, domains.isEmpty { return .failure(StatusFailure("there is no domain \"\(domain)\"")) }
        do throws(ControlFailure) {
            return .success(try ConflictList.read(domains, configuration: configuration, limit: max(0, limit)))
        } catch {
            return .failure(StatusFailure(error.message))
        }
    }

    static func describe(_ entry: ConflictEntry) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        let versions = [
            "base version " + (entry.baseVersion.map { "\"\($0)\"" } ?? "none (new on both sides)"),
            "server's version " + (entry.remoteVersion.map { "\"\($0)\"" } ?? "not a file"),
            "this machine's version \(StatusScreen.bytes(entry.localSize)), modified \(formatter.string(from: entry.localModified))",
        ]
        return """
            \(formatter.string(from: entry.detectedAt))  [\(entry.domain)]  \(entry.original)
                this machine's version kept as: \(entry.copy)
                \(versions.joined(separator: "; "))
            """
    }
}
