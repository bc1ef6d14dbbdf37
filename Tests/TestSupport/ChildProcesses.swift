import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Hands a non-Sendable value to a helper thread the test waits for.
public struct UncheckedBox<Value>: @unchecked Sendable {
    /// The value handed over.
    public let value: Value
    /// Boxes `value`.
    public init(_ value: Value) { self.value = value }
}

/// Runs blocking `work` (a child process and its pipes, a big file) on a thread of its own
/// and waits for it without blocking: tests share a few threads (one per core), and a test
/// blocked in a read or waitpid stalls every other test's tasks and timers.
public func onOwnThread<T>(_ work: @escaping () throws -> T) async throws -> T {
    let box = UncheckedBox(work)
    let result = try await withCheckedThrowingContinuation { (done: CheckedContinuation<UncheckedBox<T>, any Error>) in
        Thread {
            do { done.resume(returning: UncheckedBox(try box.value())) } catch { done.resume(throwing: error) }
        }.start()
    }
    return result.value
}

/// Runs a system tool (`mount`, `chown`, `rm`) to its end on the calling thread; its exit
/// status, or -1 when it could not be started. With `silenced`, its output and errors go to
/// /dev/null; otherwise it shares the test process's. Like every child a test starts, it
/// inherits no other descriptor (see `ChildProcess`).
@discardableResult
public func runTool(_ executable: String, _ arguments: [String], silenced: Bool = false) -> Int32 {
    guard let child = try? ChildProcess(executable, arguments, stdout: silenced ? .null : .inherited,
                                        stderr: silenced ? .null : .inherited) else { return -1 }
    child.waitUntilExit()
    return child.terminationStatus
}

/// Why a child could not be started.
public struct SpawnFailure: Error, CustomStringConvertible {
    /// What went wrong, for the test's log.
    public let description: String
}

/// Runs `arguments` (the first looked up in PATH) to its end with nothing inherited but
/// stdin and stdout on /dev/null and stderr appended to `stderr`; its wait status. Every
/// descriptor above 2 is closed in the child (see `ChildProcess`).
public func spawnClosingDescriptors(_ arguments: [String], environment: [String: String], stderr: String) throws -> Int32 {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_APPEND, 0o600)
    try ChildProcess.closeFrom(3, in: &actions)
    let argv = arguments.map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { (argv + envp).forEach { free($0) } }
    var pid: pid_t = 0
    let spawned = posix_spawnp(&pid, arguments[0], &actions, nil, argv, envp)
    guard spawned == 0 else { throw SpawnFailure(description: "cannot start \(arguments[0]): \(String(cString: strerror(spawned)))") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    return status
}

/// Waits for `process` to end without blocking a thread: tests share a few threads (one
/// per core), and a test blocked in waitpid stalls every other test's tasks.
public func waitForExit(_ process: ChildProcess) async {
    let box = UncheckedBox(process)
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        Thread { box.value.waitUntilExit(); done.resume() }.start()
    }
}
