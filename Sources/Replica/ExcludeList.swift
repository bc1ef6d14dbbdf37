import Glibc
import SyncModel

/// Names that never reach the engine: editors' temporaries, lock files, our own
/// temporary names, plus a domain's `exclude` patterns. Patterns are shell globs
/// (`fnmatch` without FNM_PATHNAME) matched against a single name, or — when they
/// contain a `/` — against the path relative to the sync root.
public struct ExcludeList: Sendable, Equatable {
    public let patterns: [String]
    /// The patterns as C strings, once: matched against a name, or against a relative path
    /// (those with a `/`). A pass checks every path of the domain against them.
    private let namePatterns: [[CChar]]
    private let pathPatterns: [[CChar]]

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
        namePatterns = self.patterns.filter { !$0.contains("/") }.map { Array($0.utf8CString) }
        pathPatterns = self.patterns.filter { $0.contains("/") }.map { Array($0.utf8CString) }
    }

    /// Parses an exclude file (one glob per line, `#` comments).
    public init(fileContents: String, extra: [String] = []) {
        self.init(patterns: fileContents.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) + extra)
    }

    /// True when the item at `path`, or a folder above it, is excluded.
    public func excludes(_ path: RemotePath) -> Bool {
        if path.components.contains(where: excludes(name:)) { return true }
        guard !pathPatterns.isEmpty else { return false }
        return path.components.indices.contains { index in
            excludes(relativePath: path.components[...index].joined(separator: "/"))
        }
    }

    /// The paths among `paths` that `excludes(_:)` covers, each folder above them checked
    /// once (a pass checks every path of the domain; most share their folders).
    public func excluded<Paths: Sequence<RemotePath>>(among paths: Paths) -> Set<RemotePath> {
        var folders: [RemotePath: Bool] = [:]
        func covered(_ path: RemotePath, leaf: Bool) -> Bool {
            guard !path.isRoot else { return false }
            if !leaf, let known = folders[path] { return known }
            let result = excludes(name: path.name) || (!pathPatterns.isEmpty && excludes(relativePath: path.description))
                || covered(path.parent, leaf: false)
            if !leaf { folders[path] = result }
            return result
        }
        var result: Set<RemotePath> = []
        for path in paths where covered(path, leaf: true) { result.insert(path) }
        return result
    }

    /// True when the item at `relativePath` (names joined by `/`) named `name` is excluded.
    public func excludes(name: String, relativePath: String) -> Bool {
        excludes(name: name) || excludes(relativePath: relativePath)
    }

    /// The same, with the relative path made only when a pattern with a `/` needs it.
    func excludes(name: String, relativePath: () -> String) -> Bool {
        excludes(name: name) || (!pathPatterns.isEmpty && excludes(relativePath: relativePath()))
    }

    private func excludes(name: String) -> Bool {
        name.withCString { name in namePatterns.contains { fnmatch($0, name, FNM_PERIOD) == 0 } }
    }

    private func excludes(relativePath: String) -> Bool {
        guard !pathPatterns.isEmpty else { return false }
        return relativePath.withCString { path in pathPatterns.contains { fnmatch($0, path, 0) == 0 } }
    }
}
