import ArgumentParser
import Foundation
import TidesyncConfig

/// `tidesync check-config`: validates the configuration file and reports every
/// problem in it, one per line. Writes nothing.
struct CheckConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Check the configuration file and report every problem in it.",
        discussion: """
            Problems are printed to standard error as FILE:LINE:COLUMN: error: MESSAGE. \
            Exit status: 0 valid, 1 invalid, 2 missing or unreadable.
            """
    )

    @Option(
        name: .long,
        help: ArgumentHelp("The configuration file (default: $XDG_CONFIG_HOME/tidesync/config.toml).", valueName: "file")
    )
    var config: String?

    func run() throws {
        let outcome = ConfigCheck.run(configPath: config)
        for line in outcome.standardOutput { print(line) }
        for line in outcome.standardError { FileHandle.standardError.write(Data((line + "\n").utf8)) }
        if outcome.exitCode != 0 { throw ExitCode(outcome.exitCode) }
    }
}
