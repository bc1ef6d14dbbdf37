// A thread of its own that touches files as another user. The daemon runs as root for files
// on demand (fanotify needs CAP_SYS_ADMIN), but what it writes into a user's own folders (the
// thumbnail cache in their home) must be theirs: owned by them, readable by their desktop,
// and written with their permissions, so a symbolic link they planted cannot make root write
// where they may not. Switching the whole process would break everything else it does; the
// kernel keeps a file-system identity per thread, so one thread takes the user's and does
// only that work.
import CSystemCalls
import Foundation
import Glibc

/// A thread that runs closures one at a time, as `identity` when one is given.
public final class IdentityThread: @unchecked Sendable {
    /// A user, as the files the thread makes are owned.
    public struct Identity: Sendable, Equatable, CustomStringConvertible {
        public var uid: uid_t
        public var gid: gid_t

        public init(uid: uid_t, gid: gid_t) {
            self.uid = uid
            self.gid = gid
        }

        public var description: String { "uid \(uid), gid \(gid)" }
    }

    /// Why the thread could not take its identity.
    public struct IdentityError: Error, Sendable {
        public let message: String
    }

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var jobs: [() -> Void] = []
    private var finished = false
    private var started: Result<Void, IdentityError>?

    /// Starts the thread; with `identity`, the thread takes it before anything runs on it.
    /// Throws when it cannot (the process lacks CAP_SETUID/CAP_SETGID); the thread is gone.
    public init(name: String, identity: Identity?) throws(IdentityError) {
        let thread = Thread { [self] in loop(identity: identity) }
        thread.name = name
        thread.start()
        let outcome = condition.withLock { () -> Result<Void, IdentityError> in
            while started == nil { condition.wait() }
            return started!
        }
        try outcome.get()
    }

    /// Runs `body` on the thread and returns what it returns; nil when the thread was
    /// finished first (then `body` never runs: not on the caller's thread either, whose
    /// identity is another).
    public func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T? {
        await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
            let accepted = condition.withLock { () -> Bool in
                guard !finished else { return false }
                jobs.append { continuation.resume(returning: body()) }
                condition.signal()
                return true
            }
            if !accepted { continuation.resume(returning: nil) }
        }
    }

    /// Lets the thread end once the closures already given have run.
    public func finish() {
        condition.withLock {
            finished = true
            condition.signal()
        }
    }

    private func loop(identity: Identity?) {
        var outcome: Result<Void, IdentityError> = .success(())
        if let identity {
            let code = tidesync_thread_take_file_identity(identity.uid, identity.gid)
            if code != 0 {
                outcome = .failure(IdentityError(message: "cannot act as \(identity): \(String(cString: strerror(code)))"))
            }
        }
        condition.withLock {
            started = outcome
            if case .failure = outcome { finished = true }
            condition.broadcast()
        }
        while let job = next() { job() }
    }

    private func next() -> (() -> Void)? {
        condition.withLock {
            while jobs.isEmpty && !finished { condition.wait() }
            return jobs.isEmpty ? nil : jobs.removeFirst()
        }
    }
}
