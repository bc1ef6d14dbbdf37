import Foundation

/// A new, unused path in the temporary folder: `prefix` and a random suffix. Nothing is
/// made there. `short` keeps the suffix to 8 characters, for paths that end in a socket (a
/// socket's path has at most 107 bytes).
public func temporaryPath(_ prefix: String, short: Bool = false) -> String {
    let unique = UUID().uuidString
    return NSTemporaryDirectory() + prefix + (short ? String(unique.prefix(8)) : unique)
}

/// Removes `path` and everything below it, even a tree deeper than PATH_MAX (`rm -r` walks
/// with `openat`, which `FileManager` does not).
public func removeTree(_ path: String) {
    runTool("/bin/rm", ["-rf", path])
}

/// Writes `text` to the file at `path`, making its missing parent folders first.
public func writeFile(_ path: String, _ text: String) throws {
    try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                            withIntermediateDirectories: true)
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
}

/// The file at `path` as UTF-8 text (invalid bytes replaced), or nil when it cannot be read.
public func readFile(_ path: String) -> String? {
    (try? Data(contentsOf: URL(fileURLWithPath: path))).map { String(decoding: $0, as: UTF8.self) }
}
