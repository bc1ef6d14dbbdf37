import ArgumentParser
import Daemon
import Foundation
import Logging
import TidesyncConfig

/// `tidesync run`: the daemon. Until the sync engine lands it validates the config,
/// opens each domain's state DB and remote, lists both sides, and says so plainly.
struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the sync daemon in the foreground (systemd runs it).")

    @Option(name: .long, help: "The config file (default: $XDG_CONFIG_HOME/tidesync/config.toml).")
    var config: String?

    @Flag(name: .long, help: "Do one full pass, then exit.")
    var once = false

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
        var failed = false
        for domain in configuration.domains {
            do {
                let survey = try await DomainSurvey.run(domain, configuration: configuration, logger: logger)
                logger.info("\(survey.description)")
            } catch {
                logger.error("\(error.message)", metadata: error.underlying.map { ["cause": "\($0)"] } ?? [:])
                failed = true
            }
        }
        logger.warning("the sync engine is not built yet: nothing was transferred (issue \"The sync engine: tidesync run moves real bytes both ways\")")
        if failed { throw ExitCode(1) }
    }
}
