import Foundation

/// Where a domain's password comes from. The configuration never holds the
/// password itself; ``resolvePassword(environment:)`` reads it when needed.
public enum CredentialSource: Sendable, Equatable, CustomStringConvertible {
    /// `password_command`: run with `/bin/sh -c`; its standard output, less one
    /// trailing newline, is the password.
    case command(String)
    /// `password_file`: an absolute path to a file readable by its owner only;
    /// its contents, less one trailing newline, are the password.
    case file(path: String)
    /// `TIDESYNC_PASSWORD_<NAME>`: used when neither key is set; no password when unset.
    case environment(variable: String)

    /// Names the source, never the password.
    public var description: String {
        switch self {
        case .command(let command): "password_command \(command)"
        case .file(let path): "password_file \(path)"
        case .environment(let variable): "environment variable \(variable)"
        }
    }

    /// Reads the password now. Returns `nil` only for an unset environment
    /// variable. Errors name the source and never contain the password or the
    /// command's output. Blocks while a command runs.
    public func resolvePassword(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(PasswordError) -> Password? {
        switch self {
        case .environment(let variable):
            return environment[variable].map(Password.init(cleartext:))
        case .file(let path):
            return try Password(cleartext: Self.readPasswordFile(path))
        case .command(let command):
            return try Password(cleartext: Self.run(command))
        }
    }

    private static func readPasswordFile(_ path: String) throws(PasswordError) -> String {
        switch PasswordFileStatus(path: path) {
        case .missing: throw .fileUnreadable(path: path, reason: "it does not exist")
        case .notRegularFile: throw .fileUnreadable(path: path, reason: "it is not a regular file")
        case .unreadable: throw .fileUnreadable(path: path, reason: "permission denied")
        case .tooOpen(let mode): throw .fileTooOpen(path: path, mode: mode)
        case .usable: break
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .fileUnreadable(path: path, reason: "it could not be read")
        }
        return dropTrailingNewline(String(decoding: data, as: UTF8.self))
    }

    private static func run(_ command: String) throws(PasswordError) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        let output = Pipe()
        process.standardOutput = output
        // The command's error output may echo what it read; it is discarded.
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw .commandNotStarted(command: command)
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationReason == .exit else {
            throw .commandKilled(command: command, signal: process.terminationStatus)
        }
        guard process.terminationStatus == 0 else {
            throw .commandFailed(command: command, status: process.terminationStatus)
        }
        return dropTrailingNewline(String(decoding: data, as: UTF8.self))
    }

    private static func dropTrailingNewline(_ text: String) -> String {
        guard text.hasSuffix("\n") else { return text }
        var trimmed = text.unicodeScalars.dropLast()
        if trimmed.last == "\r" { trimmed = trimmed.dropLast() }
        return String(String.UnicodeScalarView(trimmed))
    }
}

/// A password. Printing, interpolating, dumping or mirroring it shows
/// `<redacted>`; only ``cleartext`` reveals it.
public struct Password: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The password itself; pass it to the HTTP client and nowhere else.
    public let cleartext: String

    /// Wraps a password.
    public init(cleartext: String) {
        self.cleartext = cleartext
    }

    /// Always `<redacted>`.
    public var description: String { "<redacted>" }
    /// Always `<redacted>`.
    public var debugDescription: String { "<redacted>" }
    /// A mirror with no children, so `dump` shows nothing secret.
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}

/// Why a password could not be read. Messages name the source and say what
/// to do; they never contain the password or a command's output.
public enum PasswordError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `/bin/sh` could not be started.
    case commandNotStarted(command: String)
    /// The command exited with a non-zero status.
    case commandFailed(command: String, status: Int32)
    /// The command was killed by a signal.
    case commandKilled(command: String, signal: Int32)
    /// The password file is missing, not a file, or unreadable.
    case fileUnreadable(path: String, reason: String)
    /// The password file can be read or written by group or others.
    case fileTooOpen(path: String, mode: Int)

    /// What went wrong and what to do.
    public var description: String {
        switch self {
        case .commandNotStarted(let command):
            "password_command \(command) could not be started: /bin/sh is missing or not executable"
        case .commandFailed(let command, let status):
            "password_command \(command) failed with exit status \(status); run it in a shell to see why"
        case .commandKilled(let command, let signal):
            "password_command \(command) was killed by signal \(signal)"
        case .fileUnreadable(let path, let reason):
            "password_file \(path) cannot be read: \(reason)"
        case .fileTooOpen(let path, let mode):
            "password_file \(path) has mode \(PasswordFileStatus.octal(mode)), so other users can read or change it; "
                + "run chmod 600 \(ShellQuoting.quote(path))"
        }
    }
}

/// What a password file looks like on disk (following symbolic links).
enum PasswordFileStatus: Equatable {
    case missing
    case notRegularFile
    case unreadable
    /// Group or others have some permission: the permission bits (`mode & 0o777`).
    case tooOpen(mode: Int)
    case usable

    init(path: String) {
        let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        let files = FileManager.default
        guard let attributes = try? files.attributesOfItem(atPath: target) else {
            self = files.fileExists(atPath: path) ? .unreadable : .missing
            return
        }
        let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue ?? 0o777
        if attributes[.type] as? FileAttributeType != .typeRegular {
            self = .notRegularFile
        } else if mode & 0o077 != 0 {
            self = .tooOpen(mode: mode & 0o777)
        } else if !files.isReadableFile(atPath: target) {
            self = .unreadable
        } else {
            self = .usable
        }
    }

    /// `0644`-style octal.
    static func octal(_ mode: Int) -> String {
        let digits = String(mode, radix: 8)
        return "0" + String(repeating: "0", count: max(0, 3 - digits.count)) + digits
    }
}

/// Quotes a word for a POSIX shell, for commands shown to the user.
enum ShellQuoting {
    static func quote(_ word: String) -> String {
        let safe = word.unicodeScalars.allSatisfy {
            $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "/._-+,:@%~=".unicodeScalars.contains($0))
        }
        if safe && !word.isEmpty { return word }
        return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
