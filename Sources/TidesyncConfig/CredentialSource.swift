import Foundation
import SystemCalls

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

    /// How long `password_command` may run — a keyring waiting for the user to unlock
    /// it included — before it is stopped and the password counts as unavailable (the
    /// domain then parks as not authenticated and is tried again later). Without a bound
    /// a command that never ends (a prompt nobody answers, a hung agent) held the
    /// domain, and the thread that ran it, for ever.
    public static let commandTimeout: Duration = .seconds(60)

    /// Reads the password now. Returns `nil` only for an unset environment
    /// variable. Errors name the source and never contain the password or the
    /// command's output. Blocks while a command runs, at most `timeout`.
    public func resolvePassword(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        timeout: Duration = commandTimeout
    ) throws(PasswordError) -> Password? {
        switch self {
        case .environment(let variable):
            return environment[variable].map(Password.init(cleartext:))
        case .file(let path):
            return try Password(cleartext: Self.readPasswordFile(path))
        case .command(let command):
            return try Password(cleartext: Self.run(command, timeout: timeout))
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

    /// The most a password command may print.
    static let maximumOutput = 64 * 1024

    private static func run(_ command: String, timeout: Duration) throws(PasswordError) -> String {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw .commandNotStarted(command: command) }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        defer { close(readEnd) }
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
        let pid = spawnShell(command, stdout: writeEnd)
        close(writeEnd)
        guard let pid else { throw .commandNotStarted(command: command) }
        let deadline = ContinuousClock.now + timeout
        guard let data = readToEnd(readEnd, until: deadline), let status = waitForExit(pid, until: deadline) else {
            stop(pid)
            throw .commandTimedOut(command: command, seconds: timeout.components.seconds)
        }
        let signal = status & 0x7f
        guard signal == 0 else { throw .commandKilled(command: command, signal: signal) }
        guard (status >> 8) & 0xff == 0 else { throw .commandFailed(command: command, status: (status >> 8) & 0xff) }
        return dropTrailingNewline(String(decoding: data, as: UTF8.self))
    }

    /// Starts `/bin/sh -c command` with stdin and stderr on /dev/null (its error output
    /// may echo what it read) and stdout on `stdout`; nil when it cannot start. Not with
    /// Foundation's `Process`: it takes the end of a command for the end of every process
    /// that inherited its descriptors (a `sleep` the shell started kept a stopped command
    /// "running" until it ended). The child starts clean (`CleanSpawn`): SIGTERM stops it,
    /// and it holds none of the daemon's descriptors (sockets, the state DB, the fanotify
    /// group) but the three it is given.
    private static func spawnShell(_ command: String, stdout: Int32) -> pid_t? {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let environment = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
        return try? CleanSpawn.spawn("/bin/sh", arguments: ["sh", "-c", command], environment: environment, actions: &actions)
    }

    /// Reads `descriptor` to its end (at most `maximumOutput` bytes are kept); nil when
    /// `deadline` comes first. The wait is poll's, not a read that could block past it.
    private static func readToEnd(_ descriptor: Int32, until deadline: ContinuousClock.Instant) -> Data? {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let left = deadline - .now
            guard left > .zero else { return nil }
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let waited = poll(&ready, 1, Int32(min(1000, max(1, left / .milliseconds(1)))))
            if waited < 0, errno != EINTR { return data }
            guard waited > 0 else { continue }
            let count = read(descriptor, &buffer, buffer.count)
            if count == 0 { return data }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return data
            }
            if data.count < maximumOutput { data.append(contentsOf: buffer[..<min(count, maximumOutput - data.count)]) }
        }
    }

    /// Waits for the shell `pid` to end (a command may close its output and go on) and
    /// reaps it; its wait status, or nil when `deadline` comes first.
    private static func waitForExit(_ pid: pid_t, until deadline: ContinuousClock.Instant) -> Int32? {
        var status: Int32 = 0
        while true {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid { return status }
            if reaped < 0, errno != EINTR { return 0 }
            guard ContinuousClock.now < deadline else { return nil }
            usleep(10_000)  // a child's end is no event a descriptor here reports
        }
    }

    /// Stops a command that ran too long: SIGTERM, then SIGKILL a second later; reaps it.
    private static func stop(_ pid: pid_t) {
        kill(pid, SIGTERM)
        if waitForExit(pid, until: .now + .seconds(1)) == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        }
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
    /// The command did not end within `CredentialSource.commandTimeout`, and was stopped.
    case commandTimedOut(command: String, seconds: Int64)
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
        case .commandTimedOut(let command, let seconds):
            "password_command \(command) did not finish within \(seconds) s and was stopped (is the keyring locked, or waiting for a prompt?); run it in a shell to see why"
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
