import TOMLKit

/// Where a key lives: its table's key path, for positions, and the words that
/// name it in messages.
struct KeyScope {
    /// The table's key path, e.g. `["domain", "[0]", "placeholders"]`.
    var path: [String]
    /// Who the message is about: `""` at the top level, `domain "home"` or `domain #2`.
    var label: String
    /// Prepended to key names in messages: `""` or `"placeholders."`.
    var keyPrefix: String
    /// Where, for unknown keys: `at the top level`, `in [[domain]] "home"`.
    var place: String

    static let topLevel = KeyScope(path: [], label: "", keyPrefix: "", place: "at the top level")

    /// `domain "home": `, or nothing at the top level.
    var subject: String { label.isEmpty ? "" : label + ": " }

    func path(_ key: String) -> [String] { path + [key] }

    func name(_ key: String) -> String { keyPrefix + key }
}

/// Walks a parsed configuration table, checks every key and value, and
/// collects every problem rather than stopping at the first. Pure apart from
/// the password-file check, which looks at the file's mode, and the `ca_file`
/// check, which reads the file.
struct ConfigValidator {
    static let topLevelKeys = ["log_level", "socket", "state_dir", "domain"]
    static let domainKeys = [
        "name", "local", "remote", "username", "password_command", "password_file", "allow_insecure_http", "ca_file", "certificate_sha256",
        "poll_interval", "debounce", "rescan_interval", "transfers", "max_delete", "exclude",
        "bundle_extensions", "placeholders", "connect_timeout", "low_speed_limit", "low_speed_time",
    ]
    static let placeholderKeys = ["mode", "min_size", "alignment", "keep_local", "hydration_timeout", "hydrate_on_open",
                                  "deny_hydration", "thumbnails", "thumbnail_max_fetch", "thumbnail_cache"]

    /// The file as the user named it, for diagnostics.
    let file: String
    /// The file's absolute path.
    let filePath: String
    let sourceMap: SourceMap
    let directories: XDGDirectories
    private(set) var errors: [ConfigDiagnostic] = []
    private(set) var notices: [ConfigDiagnostic] = []

    init(file: String, filePath: String, sourceMap: SourceMap, directories: XDGDirectories) {
        self.file = file
        self.filePath = filePath
        self.sourceMap = sourceMap
        self.directories = directories
    }

    /// The directory relative paths are resolved against.
    var baseDirectory: String { PathSyntax.directory(of: filePath) }

    /// The configuration, or `nil` when ``errors`` is not empty.
    mutating func validate(_ root: TOMLTable) -> TidesyncConfiguration? {
        checkKeys(root, allowed: Self.topLevelKeys, in: .topLevel, misplaced: misplacedAtTopLevel())
        let logLevel = readLogLevel(root) ?? .info
        let stateDirectory = path(root, "state_dir", in: .topLevel) ?? directories.stateDirectory
        let socket = readSocket(root) ?? directories.socket
        let drafts = readDomains(root)
        checkNames(drafts)
        checkFolders(drafts, stateDirectory: stateDirectory)
        guard errors.isEmpty else { return nil }
        return TidesyncConfiguration(
            filePath: filePath, logLevel: logLevel, socketPath: socket, stateDirectory: stateDirectory,
            domains: drafts.compactMap(\.configuration), notices: Self.inFileOrder(notices)
        )
    }

    /// Diagnostics sorted by position; those without one come last, in the order found.
    static func inFileOrder(_ diagnostics: [ConfigDiagnostic]) -> [ConfigDiagnostic] {
        diagnostics.enumerated().sorted { a, b in
            let left = (a.element.line ?? .max, a.element.column ?? 0, a.offset)
            let right = (b.element.line ?? .max, b.element.column ?? 0, b.offset)
            return left < right
        }.map(\.element)
    }

    // MARK: Recording

    mutating func error(_ message: String, at position: SourceMap.Position?) {
        errors.append(ConfigDiagnostic(file: file, line: position?.line, column: position?.column, message: message))
    }

    mutating func note(_ message: String, at position: SourceMap.Position?) {
        notices.append(
            ConfigDiagnostic(file: file, line: position?.line, column: position?.column, severity: .note, message: message)
        )
    }

    // MARK: Top level

    private mutating func readLogLevel(_ root: TOMLTable) -> LogLevel? {
        let choices = DiagnosticWording.list(LogLevel.allCases.map { "\"\($0.rawValue)\"" }, conjunction: "or")
        guard let value = root["log_level"] else { return nil }
        guard let text = value.string else {
            typeError("log_level", value, in: .topLevel, expected: "one of \(choices)")
            return nil
        }
        guard let level = LogLevel(rawValue: text) else {
            let written = DiagnosticWording.quoted(text)
            error("log_level = \(written) is not a log level; use one of \(choices).", at: sourceMap.value(["log_level"]))
            return nil
        }
        return level
    }

    private mutating func readSocket(_ root: TOMLTable) -> String? {
        guard let socket = path(root, "socket", in: .topLevel) else { return nil }
        // sun_path holds 108 bytes including the terminating NUL.
        let length = socket.utf8.count
        if length > 107 {
            error(
                "socket path \(DiagnosticWording.quoted(socket)) is \(length) bytes long, more than the 107 a Unix "
                    + "socket path may have; choose a shorter path.",
                at: sourceMap.value(["socket"])
            )
        }
        return socket
    }

    // MARK: Unknown keys

    /// Reports every key of `table` that is not in `allowed`, suggesting the
    /// likely intended key; `misplaced` holds whole messages for keys that are
    /// known but belong in another table.
    mutating func checkKeys(_ table: TOMLTable, allowed: [String], in scope: KeyScope, misplaced: [String: String]) {
        for key in table.keys where !allowed.contains(key) {
            let position = sourceMap.key(scope.path(key))
            if let message = misplaced[key] {
                error(message, at: position)
                continue
            }
            let isTable = table[key]?.table.map { !$0.inline } ?? false
            let noun = isTable ? "table" : "key"
            let unknown = "unknown \(noun) \(DiagnosticWording.quoted(key)) \(scope.place)"
            if let suggestion = DiagnosticWording.suggestion(for: key, among: allowed) {
                let fix = isTable ? "Fix the spelling or remove the table." : "Fix the spelling or remove the line."
                error("\(unknown); did you mean \"\(suggestion)\"? \(fix)", at: position)
            } else {
                error("\(unknown); remove it (allowed here: \(DiagnosticWording.list(allowed))).", at: position)
            }
        }
    }

    private func misplacedAtTopLevel() -> [String: String] {
        var messages: [String: String] = [:]
        for key in Self.domainKeys {
            messages[key] = "key \"\(key)\" does not belong at the top level; it is a [[domain]] setting: "
                + "move it below a [[domain]] header."
        }
        for key in Self.placeholderKeys {
            messages[key] = "key \"\(key)\" does not belong at the top level; it is a [domain.placeholders] "
                + "setting: move it below a [domain.placeholders] header."
        }
        messages["password"] = "unknown key \"password\" at the top level; tidesync never reads a password from "
            + "this file: remove the line and set password_command or password_file in the [[domain]]."
        return messages
    }

    /// Messages for known keys written in a `[[domain]]` or `[domain.placeholders]` table by mistake.
    func misplacedInDomain(_ scope: KeyScope, name: String?, inPlaceholders: Bool) -> [String: String] {
        var messages: [String: String] = [:]
        let notHere = { (key: String) in "key \"\(key)\" does not belong \(scope.place); " }
        for key in ["log_level", "socket", "state_dir"] {
            messages[key] = notHere(key) + "it is a top-level setting: move it above the first [[domain]] header."
        }
        let others = inPlaceholders ? Self.domainKeys : Self.placeholderKeys
        for key in others where key != "placeholders" {
            messages[key] = notHere(key) + (inPlaceholders
                ? "it is a [[domain]] setting: move it above the [domain.placeholders] header."
                : "it is a [domain.placeholders] setting: move it below a [domain.placeholders] header.")
        }
        let variable = name.map(DomainConfiguration.passwordVariable(forDomain:)) ?? "TIDESYNC_PASSWORD_<NAME>"
        messages["password"] = "unknown key \"password\" \(scope.place); tidesync never reads a password from "
            + "this file: remove the line and use password_command, password_file or the environment variable "
            + "\(variable)."
        return messages
    }
}
