import Foundation
import Testing

/// Waits until `condition` holds, checking it every `interval` (and once more at the
/// deadline); true once it held, false when `timeout` passed first. Sleeps with
/// `Task.sleep`: a blocked test thread would stall every other test's tasks.
public func waitUntil(timeout: Duration, every interval: Duration = .milliseconds(50),
                      _ condition: () async throws -> Bool) async throws -> Bool {
    let end = ContinuousClock.now + timeout
    while ContinuousClock.now < end {
        if try await condition() { return true }
        try await Task.sleep(for: interval)
    }
    return try await condition()
}

/// Waits until `condition` holds (see `waitUntil`); after `timeout`, records an issue
/// naming `what` at the caller's line and throws, so the test stops there.
public func eventually(_ what: @autoclosure () -> String, timeout: Duration = .seconds(120), every interval: Duration = .milliseconds(50),
                       sourceLocation: SourceLocation = #_sourceLocation,
                       _ condition: () async throws -> Bool) async throws {
    if try await waitUntil(timeout: timeout, every: interval, condition) { return }
    Issue.record("timed out waiting for \(what())", sourceLocation: sourceLocation)
    throw CancellationError()
}

/// Waits until `condition` holds for as long as `progress` keeps growing: fails (as
/// `eventually` does) only when `progress` stood still for `stall`. For a wait whose length
/// follows the machine's load (a thousand fsyncs beside a busy suite), where any fixed
/// bound is either too short under load or too long to catch a hang.
public func eventually(_ what: @autoclosure () -> String, unlessStalledFor stall: Duration, progress: () throws -> Int,
                       sourceLocation: SourceLocation = #_sourceLocation,
                       _ condition: () async throws -> Bool) async throws {
    var last = try progress()
    var lastChange = ContinuousClock.now
    while true {
        if try await waitUntil(timeout: min(stall, .seconds(5)), condition) { return }
        let now = try progress()
        if now != last {
            (last, lastChange) = (now, ContinuousClock.now)
        } else if ContinuousClock.now - lastChange >= stall {
            break
        }
    }
    Issue.record("timed out waiting for \(what()) (no progress for \(stall), progress at \(last))", sourceLocation: sourceLocation)
    throw CancellationError()
}

/// Waits (at most `timeout`) until `condition` holds while `process` runs; true if it did.
/// Polls every 20 ms on a thread of its own, so a short-lived moment (a file half written
/// by a child) is caught even when the test threads are busy.
public func waitOnOwnThread(for process: ChildProcess, timeout: Duration,
                            until condition: @escaping @Sendable () -> Bool) async -> Bool {
    let box = UncheckedBox(process)
    return await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
        Thread {
            let end = ContinuousClock.now + timeout
            while ContinuousClock.now < end, box.value.isRunning {
                if condition() { return done.resume(returning: true) }
                usleep(20_000)
            }
            done.resume(returning: condition())
        }.start()
    }
}
