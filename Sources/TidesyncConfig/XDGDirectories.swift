import Foundation
import Glibc

/// The XDG base directories tidesync uses, computed from an environment
/// (so that tests control `HOME` and `XDG_*`). A variable counts only when it
/// is set to an absolute path, as the XDG spec says.
struct XDGDirectories {
    let environment: [String: String]
    /// The directory `/run/user/<uid>` when it exists, used when
    /// `XDG_RUNTIME_DIR` is not set.
    let userRunDirectory: String?

    init(environment: [String: String], userRunDirectory: String? = Self.userRunDirectory()) {
        self.environment = environment
        self.userRunDirectory = userRunDirectory
    }

    /// `$HOME` if absolute, else the account's home directory.
    var home: String {
        absoluteVariable("HOME") ?? FileManager.default.homeDirectoryForCurrentUser.path
    }

    /// `$XDG_CONFIG_HOME`, default `~/.config`.
    var configHome: String { absoluteVariable("XDG_CONFIG_HOME") ?? PathSyntax.join(home, ".config") }

    /// `$XDG_STATE_HOME`, default `~/.local/state`.
    var stateHome: String { absoluteVariable("XDG_STATE_HOME") ?? PathSyntax.join(home, ".local/state") }

    /// The default configuration file.
    var configFile: String { PathSyntax.join(configHome, "tidesync/config.toml") }

    /// The default state directory.
    var stateDirectory: String { PathSyntax.join(stateHome, "tidesync") }

    /// The default control socket: in `$XDG_RUNTIME_DIR`, else in
    /// `/run/user/<uid>`, else in the state directory.
    var socket: String {
        let directory = absoluteVariable("XDG_RUNTIME_DIR") ?? userRunDirectory ?? stateDirectory
        return PathSyntax.join(directory, "tidesync.sock")
    }

    private func absoluteVariable(_ name: String) -> String? {
        guard let value = environment[name], value.hasPrefix("/") else { return nil }
        return PathSyntax.standardize(value)
    }

    static func userRunDirectory() -> String? {
        let path = "/run/user/\(getuid())"
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            return path
        }
        return nil
    }
}

/// Lexical path handling: no file system access, no symbolic links resolved.
enum PathSyntax {
    /// `path` with empty and `.` components removed and `..` applied; `/`-rooted
    /// paths stay rooted and `..` does not climb above the root.
    static func standardize(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..": if !parts.isEmpty { parts.removeLast() }
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// The components of a standardised absolute path.
    static func components(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }

    /// Whether `inner` is `outer` or below it, comparing whole components
    /// (so `/a/bc` is not inside `/a/b`).
    static func isWithin(_ inner: String, _ outer: String) -> Bool {
        components(inner).starts(with: components(outer))
    }

    /// `base/relative`, standardised.
    static func join(_ base: String, _ relative: String) -> String {
        standardize(base + "/" + relative)
    }

    /// The directory containing `path`.
    static func directory(of path: String) -> String {
        standardize(path + "/..")
    }

    /// `path` with the home directory shown as `~`, for messages.
    static func abbreviatingHome(_ path: String, home: String) -> String {
        guard home != "/", isWithin(path, home) else { return path }
        let rest = components(path).dropFirst(components(home).count)
        return rest.isEmpty ? "~" : "~/" + rest.joined(separator: "/")
    }
}

/// How a path written in the configuration file became absolute, or why it could not.
enum ResolvedPath: Equatable {
    case absolute(String)
    case empty
    /// `~user/...`, which tidesync does not expand.
    case otherUsersHome

    /// Resolves `~`, `~/x`, `/x` and `relative/x` (against `directory`, the
    /// configuration file's directory) to a standardised absolute path.
    init(_ text: String, home: String, directory: String) {
        if text.isEmpty {
            self = .empty
        } else if text == "~" || text.hasPrefix("~/") {
            self = .absolute(PathSyntax.join(home, String(text.dropFirst())))
        } else if text.hasPrefix("~") {
            self = .otherUsersHome
        } else if text.hasPrefix("/") {
            self = .absolute(PathSyntax.standardize(text))
        } else {
            self = .absolute(PathSyntax.join(directory, text))
        }
    }
}
