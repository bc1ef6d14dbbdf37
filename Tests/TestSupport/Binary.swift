import Foundation

/// The real `tidesync` binary, run as a user would (`packaging/test.sh` exports its path
/// in `TIDESYNC_TEST_BINARY`).
public enum Binary {
    /// The binary's path, or nil when the test run was not given one.
    public static let path = ProcessInfo.processInfo.environment["TIDESYNC_TEST_BINARY"]
    /// True when `path` names an executable file.
    public static var available: Bool { path.map { FileManager.default.isExecutableFile(atPath: $0) } ?? false }

    /// How a finished child ended and what it printed.
    public struct Result: Sendable {
        /// Its exit status.
        public var status: Int32
        /// Its standard output.
        public var output: String
        /// Its standard error.
        public var errors: String

        /// A result as a child that ended so would have left it.
        public init(status: Int32, output: String, errors: String) {
            self.status = status
            self.output = output
            self.errors = errors
        }
    }

    /// Runs the binary with `arguments` and a clean XDG environment below `home`.
    public static func run(_ arguments: [String], home: String) async throws -> Result {
        try await run(path!, arguments, environment: ["HOME": home, "XDG_CONFIG_HOME": home + "/.config",
                                                      "XDG_STATE_HOME": home + "/.state", "PATH": "/usr/bin:/bin"])
    }

    /// Runs `executable` to its end and collects what it printed (stdin /dev/null). The
    /// pipes are read and the exit waited for on a thread of its own (see `onOwnThread`).
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]?) async throws -> Result {
        try await onOwnThread {
            let (status, output, errors) = try ChildProcess.collect(executable, arguments, environment: environment)
            return Result(status: status, output: String(decoding: output, as: UTF8.self),
                          errors: String(decoding: errors, as: UTF8.self))
        }
    }

    /// Starts `executable` (the binary when nil) with `arguments` and `environment` in the
    /// background, stdin inherited. Its standard output goes to the file `output`, its
    /// standard error to the file `log` (each /dev/null when nil). A log is made empty
    /// first, unless `keepingLog` and it exists (a test may have named its inode somewhere).
    public static func start(_ arguments: [String], environment: [String: String], executable: String? = nil,
                             log: String? = nil, keepingLog: Bool = false, output: String? = nil) throws -> ChildProcess {
        try ChildProcess(executable ?? path!, arguments, environment: environment,
                         stdout: output.map { .file($0, keeping: false) } ?? .null,
                         stderr: log.map { .file($0, keeping: keepingLog) } ?? .null)
    }
}
