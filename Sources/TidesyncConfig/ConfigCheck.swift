import Foundation

/// What `tidesync check-config` does, as a function: the lines it prints and
/// its exit status, so that it can be tested without running the binary.
public enum ConfigCheck {
    /// The result of a check.
    public struct Outcome: Sendable, Equatable {
        /// Lines for standard output: `FILE: OK, N domains` and the notes.
        public var standardOutput: [String]
        /// Lines for standard error: one per problem.
        public var standardError: [String]
        /// 0 valid, 1 invalid, 2 missing or unreadable.
        public var exitCode: Int32
    }

    /// Checks the file at `configPath`, or at ``ConfigLoader/defaultPath(environment:)``
    /// (shown with `~` for the home directory) when it is `nil`.
    public static func run(
        configPath: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Outcome {
        let directories = XDGDirectories(environment: environment)
        let file = configPath ?? PathSyntax.abbreviatingHome(directories.configFile, home: directories.home)
        switch ConfigLoader.load(path: file, environment: environment) {
        case .success(let configuration):
            let count = configuration.domains.count
            let summary = "\(file): OK, \(count) \(count == 1 ? "domain" : "domains")"
            return Outcome(standardOutput: [summary] + configuration.notices.map(\.description), standardError: [], exitCode: 0)
        case .failure(.unreadable(let diagnostic)):
            var lines = [diagnostic.description]
            if configPath == nil {
                lines.append(
                    "\(file): note: this is the default, $XDG_CONFIG_HOME/tidesync/config.toml "
                        + "(~/.config/tidesync/config.toml when XDG_CONFIG_HOME is not set), used because --config was not given"
                )
            }
            return Outcome(standardOutput: [], standardError: lines, exitCode: 2)
        case .failure(.invalid(let diagnostics)):
            return Outcome(standardOutput: [], standardError: diagnostics.map(\.description), exitCode: 1)
        }
    }
}
