import Foundation
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// A child process that inherits no descriptor of the test process but 0, 1 and 2.
///
/// Foundation's `Process` passes every descriptor opened without O_CLOEXEC to its child,
/// and `Data.write` and `FileHandle` open without it. Tests run side by side in one
/// process: a daemon one test starts while another test writes a file keeps that file open
/// for writing for the daemon's whole life, and tidesync rightly holds such a file back
/// (seen: the bundle scenario test's 1 000 members held for four passes on CI). Every child
/// a test starts goes through this type.
public final class ChildProcess: @unchecked Sendable {
    /// Where one of the child's standard streams goes.
    public enum Stream {
        /// What the test process has (stdin only keeps it).
        case inherited
        /// /dev/null.
        case null
        /// A file, made empty first unless `keeping` (then written from its start, its
        /// inode kept: a test may have named it somewhere).
        case file(String, keeping: Bool)
        /// A file appended to (made when missing).
        case appending(String)
        /// The write end of a pipe the caller made.
        case descriptor(Int32)
    }

    /// Why a child ended, as `Process.TerminationReason` says it.
    public enum TerminationReason: Sendable { case exit, uncaughtSignal }

    /// The child's pid.
    public let processIdentifier: Int32
    private let lock = NSLock()
    private var waitStatus: Int32?

    /// Starts `executable` (looked up in PATH when it has no slash) with `arguments`;
    /// `environment` nil passes the test process's own. `passing` descriptors are the
    /// child's 3, 4, … (as a service manager passes them; none of them may be below 3 +
    /// their count, or one would be overwritten before it is passed).
    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                stdin: Stream = .inherited, stdout: Stream = .null, stderr: Stream = .null, passing: [Int32] = []) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (target, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            try Self.add(stream, as: target, to: &actions)
        }
        let first = Int32(3)
        for (index, fd) in passing.enumerated() {
            guard fd >= first + Int32(passing.count) else {
                throw SpawnFailure(description: "descriptor \(fd) cannot be passed as \(first + Int32(index)): move it higher first")
            }
            posix_spawn_file_actions_adddup2(&actions, fd, first + Int32(index))
        }
        let environment = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        do {
            processIdentifier = try CleanSpawn.spawn(executable, arguments: [executable] + arguments, environment: environment,
                                                     actions: &actions, keeping: first + Int32(passing.count), searchPath: true)
        } catch {
            throw SpawnFailure(description: error.description)
        }
    }

    private static func add(_ stream: Stream, as target: Int32,
                            to actions: inout posix_spawn_file_actions_t) throws {
        switch stream {
        case .inherited:
            return
        case .null:
            posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
        case .file(let path, let keeping):
            let flags = O_WRONLY | O_CREAT | (keeping ? 0 : O_TRUNC)
            posix_spawn_file_actions_addopen(&actions, target, path, flags, 0o600)
        case .appending(let path):
            posix_spawn_file_actions_addopen(&actions, target, path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        case .descriptor(let fd):
            posix_spawn_file_actions_adddup2(&actions, fd, target)
        }
    }

    /// The wait status once the child has ended (reaping it then), nil while it runs.
    private func reaped() -> Int32? {
        lock.lock()
        defer { lock.unlock() }
        if let waitStatus { return waitStatus }
        var status: Int32 = 0
        if waitpid(processIdentifier, &status, WNOHANG) == processIdentifier { waitStatus = status }
        return waitStatus
    }

    /// True until the child has ended.
    public var isRunning: Bool { reaped() == nil }

    /// Blocks until the child has ended. Waits without reaping, so `isRunning` on another
    /// thread never finds the child gone and its status lost.
    public func waitUntilExit() {
        while reaped() == nil {
            var info = siginfo_t()
            if waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT) != 0 && errno != EINTR { break }
        }
    }

    /// Why it ended (only meaningful once it has).
    public var terminationReason: TerminationReason {
        guard let status = reaped() else { return .exit }
        return status & 0x7f == 0 ? .exit : .uncaughtSignal
    }

    /// Its exit code, or the signal that ended it (as `Process` reports them).
    public var terminationStatus: Int32 {
        guard let status = reaped() else { return 0 }
        return status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
    }

    /// Sends SIGTERM.
    public func terminate() { _ = kill(processIdentifier, SIGTERM) }

    /// Sends SIGINT.
    public func interrupt() { _ = kill(processIdentifier, SIGINT) }

    /// Runs `executable` to its end, collecting its standard output and error (read side by
    /// side, so a child filling one pipe never blocks on it); stdin is /dev/null.
    public static func collect(_ executable: String, _ arguments: [String],
                               environment: [String: String]? = nil) throws -> (status: Int32, output: Data, errors: Data) {
        var out: [Int32] = [0, 0], err: [Int32] = [0, 0]
        // Plain pipe(): every child closes what it did not ask for anyway (pipe2 is not in
        // Swift's Glibc module).
        guard pipe(&out) == 0 else { throw SpawnFailure(description: "pipe: \(String(cString: strerror(errno)))") }
        guard pipe(&err) == 0 else {
            close(out[0]); close(out[1])
            throw SpawnFailure(description: "pipe: \(String(cString: strerror(errno)))")
        }
        let child: ChildProcess
        do {
            child = try ChildProcess(executable, arguments, environment: environment, stdin: .null,
                                     stdout: .descriptor(out[1]), stderr: .descriptor(err[1]))
        } catch {
            [out[0], out[1], err[0], err[1]].forEach { close($0) }
            throw error
        }
        close(out[1]); close(err[1])
        let (output, errors) = drain(out[0], err[0])
        child.waitUntilExit()
        return (child.terminationStatus, output, errors)
    }

    /// Reads both descriptors to their ends with poll, then closes them.
    private static func drain(_ first: Int32, _ second: Int32) -> (Data, Data) {
        var data = [Data(), Data()]
        var fds = [pollfd(fd: first, events: Int16(POLLIN), revents: 0), pollfd(fd: second, events: Int16(POLLIN), revents: 0)]
        var buffer = [UInt8](repeating: 0, count: 65536)
        while fds.contains(where: { $0.fd >= 0 }) {
            if poll(&fds, nfds_t(fds.count), -1) < 0 {
                if errno == EINTR { continue }
                break
            }
            for index in fds.indices where fds[index].fd >= 0 && fds[index].revents != 0 {
                let count = read(fds[index].fd, &buffer, buffer.count)
                if count > 0 {
                    data[index].append(contentsOf: buffer[0..<count])
                } else if count == 0 || errno != EINTR && errno != EAGAIN {
                    close(fds[index].fd)
                    fds[index].fd = -1
                }
            }
        }
        return (data[0], data[1])
    }
}
