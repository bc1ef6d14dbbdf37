// A thread of its own that touches files as another user. The daemon runs as root for files
// on demand (fanotify needs CAP_SYS_ADMIN), but what it writes into a user's own folders (the
// thumbnail cache in their home) must be theirs: owned by them, readable by their desktop,
// and written with their permissions, so a symbolic link they planted cannot make root write
// where they may not. Switching the whole process would break everything else it does; the
// kernel keeps a file-system identity per thread, so one thread takes the user's for each
// closure it runs and gives it back before anything else happens on it: a thread started
// from it (libdispatch starts a worker from whichever thread resumes a task when none is
// idle) would otherwise be born as the user.
import CSystemCalls
import Foundation
import Glibc

/// A thread that runs closures one at a time, each as `identity` when one is given.
public final class IdentityThread: @unchecked Sendable {
    /// A user, as the files the thread makes are owned.
    public struct Identity: Sendable, Equatable, CustomStringConvertible {
        public var uid: uid_t
        public var gid: gid_t

        /// The user `uid` with primary group `gid`, and no supplementary groups.
        public init(uid: uid_t, gid: gid_t) {
            self.uid = uid
            self.gid = gid
        }

        /// "uid U, gid G", as the log names it.
        public var description: String { "uid \(uid), gid \(gid)" }
    }

    /// Why the thread could not act as its user.
    public struct IdentityError: Error, Sendable {
        /// What failed and the system's reason.
        public let message: String
    }

    /// Where the thread is in its life.
    private enum State {
        case running
        /// No more closures are taken; the queued ones still run.
        case finishing
        /// It could not take or give back its identity: nothing more runs on it.
        case broken(IdentityError)
    }

    private let identity: Identity?
    private let condition = NSCondition()
    // Guarded by `condition`.
    /// Each is called with false instead of being run once the thread is broken.
    private var jobs: [(_ allowed: Bool) -> Void] = []
    private var state = State.running

    /// Starts the thread. With `identity`, it first checks it can take it and give it back
    /// (the process needs CAP_SETUID and CAP_SETGID); throws when it cannot.
    public init(name: String, identity: Identity?) throws(IdentityError) {
        self.identity = identity
        let thread = Thread { [self] in loop() }
        thread.name = name
        thread.start()
        let checked: Result<Void, IdentityError>? = identity == nil ? nil : awaitCheck()
        if case .failure(let error) = checked { throw error }
    }

    /// Runs `body` on the thread, as the identity, and returns what it returns once the
    /// thread is itself again; nil when the thread was finished or broken first (then `body`
    /// never runs, not on the caller's thread either, whose identity is another).
    public func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T? {
        await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
            let accepted = condition.withLock { () -> Bool in
                guard case .running = state else { return false }
                jobs.append { [self] allowed in
                    let result = allowed ? asIdentity(body) : nil
                    continuation.resume(returning: result)  // as the thread's own identity again
                }
                condition.signal()
                return true
            }
            if !accepted { continuation.resume(returning: nil) }
        }
    }

    /// Lets the thread end once the closures already given have run.
    public func finish() {
        condition.withLock {
            if case .running = state { state = .finishing }
            condition.signal()
        }
    }

    /// Runs `body` as the identity; nil (and the thread broken) when the identity cannot
    /// be taken or given back.
    private func asIdentity<T>(_ body: () -> T) -> T? {
        guard let identity else { return body() }
        var saved = tidesync_file_identity()
        let taken = tidesync_thread_take_file_identity(identity.uid, identity.gid, &saved)
        let result = taken == 0 ? body() : nil
        let restored = tidesync_thread_restore_file_identity(&saved)
        guard taken == 0, restored == 0 else {
            let code = taken != 0 ? taken : restored
            let error = IdentityError(message: "cannot \(taken != 0 ? "act as" : "stop acting as") \(identity): \(String(cString: strerror(code)))")
            condition.withLock { state = .broken(error) }
            return nil
        }
        return result
    }

    /// Takes and gives back the identity once, on the thread, before any closure runs.
    private func awaitCheck() -> Result<Void, IdentityError> {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var outcome = Result<Void, IdentityError>.success(())
        condition.withLock {
            jobs.append { [self] allowed in
                if !allowed || asIdentity({ true }) == nil, case .broken(let error) = condition.withLock({ state }) {
                    outcome = .failure(error)
                }
                done.signal()
            }
            condition.signal()
        }
        done.wait()
        return outcome
    }

    private func loop() {
        while let (job, allowed) = next() { job(allowed) }
    }

    /// The next closure and whether it may run; nil once none is left and none may come.
    private func next() -> ((_ allowed: Bool) -> Void, Bool)? {
        condition.withLock {
            while true {
                if !jobs.isEmpty {
                    if case .broken = state { return (jobs.removeFirst(), false) }
                    return (jobs.removeFirst(), true)
                }
                guard case .running = state else { return nil }
                condition.wait()
            }
        }
    }
}
