import ArgumentParser
import Control
import Foundation
import TidesyncConfig

/// The options every command that talks to the daemon takes, and how it finds the daemon.
struct DaemonOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The configuration file (default: $XDG_CONFIG_HOME/tidesync/config.toml).", valueName: "file"))
    var config: String?

    @Option(name: .long, help: ArgumentHelp("The daemon's control socket (default: the config's `socket`, else $XDG_RUNTIME_DIR/tidesync.sock).", valueName: "path"))
    var socket: String?

    /// The configuration, or the errors that make it unusable.
    func loadConfiguration() -> Result<TidesyncConfiguration, ConfigErrors> {
        ConfigLoader.load(path: config ?? ConfigLoader.defaultPath())
    }

    /// Where the daemon listens: `--socket`, else the configuration's; nil (with the
    /// configuration's errors written to stderr) when neither is usable.
    func socketPath(_ configuration: TidesyncConfiguration?) -> String? {
        socket ?? configuration?.socketPath
    }
}

/// Exit statuses shared by the commands that talk to the daemon.
enum DaemonExit {
    /// The daemon is not running.
    static let notRunning: Int32 = 3
    /// No answer could be had: the configuration is unusable, the socket belongs to another
    /// user, or the daemon refused the request.
    static let cannotAsk: Int32 = 4
}

/// Writes `text` and a newline to standard error.
func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

extension ControlClient.Failure {
    /// The sentence `tidesync` prints for this failure.
    var message: String {
        switch self {
        case .notRunning: "the tidesync daemon is not running (start it with `systemctl --user start tidesync`)"
        case .permissionDenied(let text), .failed(let text): text
        }
    }
}
