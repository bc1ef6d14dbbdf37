// The fanotify groups of files on demand in systemd's file descriptor store (issue 15 item
// 4; sd_notify(3) FDSTORE=1, sd_listen_fds(3)): the manager keeps a copy of each group, so
// after a crash the group lives on and a reader of a placeholder waits for the restart
// rather than reading zeros (the kernel lets pending reads through only when the last
// copy of a group closes, facts §0.2), and the restarted daemon is handed the group back
// (LISTEN_FDS) and answers what waited. A clean stop takes the group out of the store, so
// a group nobody reads is never handed back. The unit needs `FileDescriptorStoreMax=`;
// without systemd (no $NOTIFY_SOCKET) nothing is stored and nothing is inherited.
import Foundation
import Glibc
import Logging
import TidesyncConfig

/// The descriptors the service manager passed (by name), and the store they go back to.
public final class StoredGroups: @unchecked Sendable {
    /// The daemon's: read from the environment once, at the first use (`runDaemon` makes
    /// it early, before any child is started, so no child inherits a group).
    static let shared = StoredGroups(environment: ProcessInfo.processInfo.environment)

    private let lock = NSLock()
    private var passed: [String: Int32]
    let notifier: ServiceNotifier

    /// Takes the descriptors passed with `environment` (when `LISTEN_PID` is this
    /// process: from descriptor 3, `LISTEN_FDS` of them, named by `LISTEN_FDNAMES`),
    /// makes them close-on-exec and removes the variables, so no child takes them as its own.
    init(environment: [String: String], notifier: ServiceNotifier? = nil) {
        self.notifier = notifier ?? ServiceNotifier(environment: environment)
        passed = Self.passedDescriptors(environment)
        for fd in passed.values { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(name) }
    }

    /// sd_listen_fds_with_names: name → descriptor; unnamed ones are "unknown" (and unused).
    static func passedDescriptors(_ environment: [String: String]) -> [String: Int32] {
        guard let pid = environment["LISTEN_PID"].flatMap({ Int32($0) }), pid == getpid(),
              let count = environment["LISTEN_FDS"].flatMap({ Int32($0) }), count > 0, count < 4096 else { return [:] }
        let names = (environment["LISTEN_FDNAMES"] ?? "").split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        var passed: [String: Int32] = [:]
        for index in 0..<count {
            let name = Int(index) < names.count ? names[Int(index)] : "unknown"
            passed[name] = passed[name] ?? 3 + index
        }
        return passed
    }

    /// The store's name of the group of `domain` (a domain name is letters, digits, "_"
    /// and "-": a valid FDNAME).
    static func name(of domain: String) -> String { "fanotify-" + domain }

    /// Takes the group the manager passed for `domain`, nil when none came.
    func take(domain: String) -> Int32? {
        lock.withLock { passed.removeValue(forKey: Self.name(of: domain)) }
    }

    /// Hands the group of `domain` to the manager (a copy of it; the manager drops
    /// duplicates). False without a manager or when it could not be sent.
    @discardableResult
    func store(_ group: Int32, domain: String) -> Bool {
        notifier.send("FDSTORE=1\nFDNAME=\(Self.name(of: domain))", descriptors: [group])
    }

    /// Takes the group of `domain` out of the manager's store.
    @discardableResult
    func remove(domain: String) -> Bool {
        notifier.send("FDSTOREREMOVE=1\nFDNAME=\(Self.name(of: domain))")
    }

    /// At the daemon's start, before any child process: takes the descriptors the manager
    /// passed and closes the groups no domain of `configuration` with files on demand uses.
    public static func takeOver(for configuration: TidesyncConfiguration, logger: Logger) {
        let domains = configuration.domains.filter { $0.placeholders.mode != .off }.map(\.name)
        shared.dropAll(except: Set(domains), logger: logger)
    }

    /// Closes the groups passed for domains not in `domains` (removed from the config, or
    /// files on demand turned off) and takes them out of the store: a group nobody reads
    /// would keep its readers waiting for good. Returns their names.
    @discardableResult
    func dropAll(except domains: Set<String>, logger: Logger) -> [String] {
        let keep = Set(domains.map(Self.name(of:)))
        let dropped = lock.withLock { () -> [String: Int32] in
            let dropped = passed.filter { !keep.contains($0.key) }
            for name in dropped.keys { passed[name] = nil }
            return dropped
        }
        for (name, fd) in dropped where name.hasPrefix("fanotify-") {
            logger.notice("closing the fanotify group \(name) the service manager kept: no domain uses it now")
            notifier.send("FDSTOREREMOVE=1\nFDNAME=\(name)")
            close(fd)
        }
        return dropped.keys.sorted()
    }
}
