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
/// stdin and stdout on /dev/null and stderr appended to `stderr`; 0 when it exited 0 (its
/// exit status or the signal that ended it otherwise). See `ChildProcess`.
public func spawnClosingDescriptors(_ arguments: [String], environment: [String: String], stderr: String) throws -> Int32 {
    let child = try ChildProcess(arguments[0], Array(arguments.dropFirst()), environment: environment,
                                 stdin: .null, stdout: .null, stderr: .appending(stderr))
    child.waitUntilExit()
    return child.terminationStatus
}

/// Waits for `process` to end without blocking a thread: tests share a few threads (one
/// per core), and a test blocked in waitpid stalls every other test's tasks.
public func waitForExit(_ process: ChildProcess) async {
    let box = UncheckedBox(process)
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        Thread { box.value.waitUntilExit(); done.resume() }.start()
    }
}
