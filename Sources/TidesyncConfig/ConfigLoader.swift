import Foundation
import TOMLKit

/// Reads and validates configuration files. Never writes anything, never
/// traps on any input, and reports every problem in a file rather than the first.
public enum ConfigLoader {
    /// `$XDG_CONFIG_HOME/tidesync/config.toml`, or `~/.config/tidesync/config.toml`
    /// when `XDG_CONFIG_HOME` is unset or not absolute.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        XDGDirectories(environment: environment).configFile
    }

    /// Loads the file at `path` (absolute, relative to the working directory,
    /// or starting with `~`). `path` is also the file name diagnostics show.
    /// `environment` supplies `HOME` and the `XDG_*` variables used for `~` and
    /// the defaults. Checks the mode of any `password_file`, but reads no password.
    public static func load(
        path: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Result<TidesyncConfiguration, ConfigErrors> {
        let directories = XDGDirectories(environment: environment)
        let filePath = absolutePath(path, home: directories.home)
        let data: Data
        switch read(filePath, shownAs: path) {
        case .success(let contents): data = contents
        case .failure(let failure): return .failure(failure)
        }
        guard let text = String(data: data, encoding: .utf8) else {
            let message = "the file is not UTF-8 text; save it as UTF-8."
            return .failure(.invalid([ConfigDiagnostic(file: path, message: message)]))
        }
        return parse(text, file: path, filePath: filePath, directories: directories)
    }

    static func parse(
        _ text: String, file: String, filePath: String, directories: XDGDirectories
    ) -> Result<TidesyncConfiguration, ConfigErrors> {
        if let problem = nulCharacter(in: text, file: file) { return .failure(.invalid([problem])) }
        let root: TOMLTable
        do {
            root = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            return .failure(.invalid([syntaxError(error, file: file)]))
        } catch {
            return .failure(.invalid([ConfigDiagnostic(file: file, message: "the file could not be parsed as TOML.")]))
        }
        var validator = ConfigValidator(
            file: file, filePath: filePath, sourceMap: SourceMap(text: text), directories: directories
        )
        guard let configuration = validator.validate(root) else {
            return .failure(.invalid(ConfigValidator.inFileOrder(validator.errors)))
        }
        return .success(configuration)
    }

    private static func absolutePath(_ path: String, home: String) -> String {
        switch ResolvedPath(path, home: home, directory: FileManager.default.currentDirectoryPath) {
        case .absolute(let absolute): absolute
        case .empty, .otherUsersHome: PathSyntax.join(FileManager.default.currentDirectoryPath, path)
        }
    }

    private static func read(_ filePath: String, shownAs file: String) -> Result<Data, ConfigErrors> {
        let files = FileManager.default
        var isDirectory: ObjCBool = false
        let unreadable = { (message: String) in
            Result<Data, ConfigErrors>.failure(.unreadable(ConfigDiagnostic(file: file, message: message)))
        }
        guard files.fileExists(atPath: filePath, isDirectory: &isDirectory) else {
            let parent = file.lastIndex(of: "/").map { String(file[..<$0]) } ?? "."
            let directory = ShellQuoting.quote(parent.isEmpty ? "/" : parent)
            return unreadable(
                "no such file; create it, e.g. mkdir -p \(directory) && cp config/example.toml "
                    + "\(ShellQuoting.quote(file)) (example.toml is in the tidesync sources), then edit it; "
                    + "or name another file with --config FILE."
            )
        }
        guard !isDirectory.boolValue else {
            return unreadable("this is a directory, not a configuration file; name the file with --config FILE.")
        }
        guard let data = files.contents(atPath: filePath) else {
            return unreadable("the file cannot be read (permission denied?); make it readable by the user running tidesync.")
        }
        return .success(data)
    }

    private static func nulCharacter(in text: String, file: String) -> ConfigDiagnostic? {
        guard text.unicodeScalars.contains("\0") else { return nil }
        var line = 1
        var column = 1
        for scalar in text.unicodeScalars {
            if scalar == "\0" { break }
            if scalar == "\n" {
                line += 1
                column = 1
            } else {
                column += 1
            }
        }
        let message = "the file contains a NUL character; a configuration file must be plain text."
        return ConfigDiagnostic(file: file, line: line, column: column, message: message)
    }

    private static func syntaxError(_ error: TOMLParseError, file: String) -> ConfigDiagnostic {
        let prefix = "Error while parsing "
        let description = error.description
        let detail = description.hasPrefix(prefix)
            ? "TOML syntax error while parsing " + description.dropFirst(prefix.count)
            : "TOML syntax error: " + description
        return ConfigDiagnostic(
            file: file, line: error.source.begin.line, column: error.source.begin.column,
            message: detail.hasSuffix(".") ? detail : detail + "."
        )
    }
}
