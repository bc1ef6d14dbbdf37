/// A loaded and validated tidesync configuration file.
///
/// Every path in it is absolute and standardised; every value has been checked,
/// so the daemon can use it without further validation. It holds no password:
/// passwords are read when needed through ``DomainConfiguration/resolvePassword(environment:)``.
public struct TidesyncConfiguration: Sendable, Equatable {
    /// The absolute path of the file this was loaded from.
    public var filePath: String
    /// How much the daemon logs (`log_level`, default `.info`).
    public var logLevel: LogLevel
    /// The control socket (`socket`), by default `$XDG_RUNTIME_DIR/tidesync.sock`.
    public var socketPath: String
    /// Where the per-domain state databases live (`state_dir`), by default `$XDG_STATE_HOME/tidesync`.
    public var stateDirectory: String
    /// The synced folders, in file order; at least one, with unique names and
    /// local folders that do not overlap.
    public var domains: [DomainConfiguration]
    /// Notes for the log: settings that are accepted and validated but not yet
    /// in effect. Each has severity `.note`; log its `message`.
    public var notices: [ConfigDiagnostic]

    /// Creates a configuration; ``ConfigLoader`` is the usual way to get one.
    public init(
        filePath: String, logLevel: LogLevel, socketPath: String, stateDirectory: String,
        domains: [DomainConfiguration], notices: [ConfigDiagnostic]
    ) {
        self.filePath = filePath
        self.logLevel = logLevel
        self.socketPath = socketPath
        self.stateDirectory = stateDirectory
        self.domains = domains
        self.notices = notices
    }

    /// The state database of `domain`: `<stateDirectory>/<name>.sqlite`.
    public func stateDatabasePath(for domain: DomainConfiguration) -> String {
        stateDirectory + "/" + domain.name + ".sqlite"
    }
}

/// The daemon's log level; the raw values are those of the `log_level` key and
/// of swift-log's `Logger.Level`.
public enum LogLevel: String, Sendable, CaseIterable {
    /// Everything, including per-request detail.
    case trace
    /// Detail useful when looking into a problem.
    case debug
    /// Normal operation (the default).
    case info
    /// Noteworthy events.
    case notice
    /// Something went wrong and was handled.
    case warning
    /// Something failed.
    case error
    /// The daemon cannot go on.
    case critical
}
