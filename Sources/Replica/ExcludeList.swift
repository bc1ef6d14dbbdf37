#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SyncModel

/// Names that never reach the engine: editors' temporaries, lock files, our own
/// temporary names, plus a domain's `exclude` patterns. Patterns are shell globs
/// (`fnmatch` without FNM_PATHNAME) matched against a single name, or — when they
/// contain a `/` — against the path relative to the sync root.
public struct ExcludeList: Sendable, Equatable {
    public let patterns: [String]

    /// Always excluded, whatever the config says: names tidesync writes itself.
    public static let builtIn = [".tidesync-*"]

    /// The default list, the same as `config/exclude.default` (a test keeps them equal):
    /// editor backups and swap files, office lock files, partial downloads, atomic-save
    /// temporaries, NFS silly renames. A domain's `exclude` patterns add to it.
    public static let defaultPatterns = [
        "*~", ".*~", ".*.swp", ".*.swx", "4913", ".#*", "\\#*#", ".~lock.*#", "~$*", "*.part", "*.crdownload",
        ".goutputstream-*", ".nfs*", ".dat.nosync*", ".tidesync-*",
    ]

    /// `patterns` plus the built-in ones; blank lines and `#` comments are dropped.
    public init(patterns: [String]) {
        let cleaned = patterns.map { String($0.trimmingWhitespace()) }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
        self.patterns = Self.builtIn + cleaned
    }

    /// Parses an exclude file (one glob per line, `#` comments).
    public init(fileContents: String, extra: [String] = []) {
        self.init(patterns: fileContents.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) + extra)
    }

    /// True when the item at `path`, or a folder above it, is excluded.
    public func excludes(_ path: RemotePath) -> Bool {
        path.components.indices.contains { index in
            excludes(name: path.components[index], relativePath: path.components[...index].joined(separator: "/"))
        }
    }

    /// True when the item at `relativePath` (names joined by `/`) named `name` is excluded.
    public func excludes(name: String, relativePath: String) -> Bool {
        patterns.contains { pattern in
            pattern.contains("/") ? fnmatch(pattern, relativePath, 0) == 0 : fnmatch(pattern, name, FNM_PERIOD) == 0
        }
    }
}
