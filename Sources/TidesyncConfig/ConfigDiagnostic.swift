import Foundation

/// One finding about a configuration file: an error that makes it unusable, or
/// a note the daemon logs and `check-config` prints.
///
/// `description` is the line a user sees, in the form compilers use:
/// `FILE:LINE:COLUMN: error: MESSAGE`; the column, or the line and the column,
/// are left out when unknown. A diagnostic never contains a password.
public struct ConfigDiagnostic: Sendable, Hashable, CustomStringConvertible {
    /// How serious a diagnostic is.
    public enum Severity: String, Sendable, Hashable {
        /// The file cannot be used until this is fixed.
        case error
        /// Accepted, but worth knowing (for example a setting not yet in effect).
        case note
    }

    /// The configuration file as the user named it (`~` may stand for the home directory).
    public var file: String
    /// The 1-based line, when known.
    public var line: Int?
    /// The 1-based column (in Unicode scalars), when known.
    public var column: Int?
    /// Whether this is an error or a note.
    public var severity: Severity
    /// What is wrong and what to do, without the location; a single line.
    public var message: String

    /// Creates a diagnostic.
    public init(file: String, line: Int? = nil, column: Int? = nil, severity: Severity = .error, message: String) {
        self.file = file
        self.line = line
        self.column = line == nil ? nil : column
        self.severity = severity
        // One diagnostic, one line, whatever a path or a parser message holds.
        self.message = message.replacingOccurrences(of: "\r", with: "\\r").replacingOccurrences(of: "\n", with: "\\n")
    }

    /// `FILE:LINE:COLUMN: SEVERITY: MESSAGE`, with unknown parts left out.
    public var description: String {
        var location = file
        if let line {
            location += ":\(line)"
            if let column { location += ":\(column)" }
        }
        return "\(location): \(severity.rawValue): \(message)"
    }
}

/// Why a configuration could not be loaded.
public enum ConfigErrors: Error, Sendable, CustomStringConvertible {
    /// The file is missing or cannot be read; `check-config` exits with status 2.
    case unreadable(ConfigDiagnostic)
    /// The file was read but has problems: every one found, in file order;
    /// `check-config` exits with status 1.
    case invalid([ConfigDiagnostic])

    /// Every diagnostic, in file order.
    public var diagnostics: [ConfigDiagnostic] {
        switch self {
        case .unreadable(let diagnostic): [diagnostic]
        case .invalid(let diagnostics): diagnostics
        }
    }

    /// One diagnostic per line.
    public var description: String {
        diagnostics.map(\.description).joined(separator: "\n")
    }
}
