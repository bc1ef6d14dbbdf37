@testable import Control
import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A real `tidesync run` in a scratch home, with helpers to ask it things through the real
/// binary. The socket lives in the scratch home, so fixtures never meet.
final class DaemonFixture {
    let home: String
    let local: String
    let socket: String
    var remoteDisk = ""
    var environment: [String: String]
    var daemon: ChildProcess?
    var daemonLog: String { home + "/daemon.log" }

    /// The repository, found from this file's path.
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    init() throws {
        // Short: a socket path has at most 107 bytes.
        home = "/tmp/tidesync-st-" + UUID().uuidString.prefix(8)
        local = home + "/Cloud"
        socket = home + "/run/tidesync.sock"
        try FileManager.default.createDirectory(atPath: local, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: home + "/.config/tidesync", withIntermediateDirectories: true)
        environment = ["HOME": home, "XDG_CONFIG_HOME": home + "/.config", "XDG_STATE_HOME": home + "/.state",
                       "PATH": "/usr/bin:/bin"]
    }

    deinit {
        if let daemon, daemon.isRunning {
            kill(daemon.processIdentifier, SIGKILL)
            daemon.waitUntilExit()
        }
        if !remoteDisk.isEmpty { try? FileManager.default.removeItem(atPath: remoteDisk) }
        try? FileManager.default.removeItem(atPath: home)
    }

    /// Writes the config: a local-directory remote, or the WebDAV `url` with the test account.
    /// Every pass, even a poll that finds nothing, shows as `syncing` (exit 1) while it runs:
    /// a test that samples status after `waitUntilIdle` and needs no remote walk asks for
    /// `poll: "1h"`, so no pass can start between the wait and its sample.
    /// `placeholders` is the body of the domain's `[domain.placeholders]` table (none: the
    /// defaults, files on demand `auto`).
    func configure(url: String? = nil, disk: String? = nil, password: String? = nil, extra: String = "",
                   topLevel: String = "", poll: String = "1s", placeholders: String? = nil) throws {
        var domain = "[[domain]]\nname = \"st\"\nlocal = \"~/Cloud\"\npoll_interval = \"\(poll)\"\n" + extra
        if let url, let disk {
            remoteDisk = disk
            domain += "remote = \"\(url)\"\nusername = \"\(TestApache.user ?? "tidesync")\"\n"
            environment["TIDESYNC_PASSWORD_ST"] = password ?? TestApache.password
        } else {
            remoteDisk = home + "/store"
            try FileManager.default.createDirectory(atPath: remoteDisk, withIntermediateDirectories: true)
            domain += "remote = \"file://\(remoteDisk)\"\n"
        }
        if let placeholders { domain += "\n[domain.placeholders]\n" + placeholders + "\n" }
        try write(config: "socket = \"\(socket)\"\n" + topLevel + domain)
    }

    /// A fresh collection on the shared Apache (the test script's), or nil when it is not running.
    static func sharedApacheCollection() throws -> (url: String, disk: String)? {
        guard let base = TestApache.depthInfinityURLText, let root = TestApache.depthInfinityDiskRoot else { return nil }
        let name = "st-" + UUID().uuidString.prefix(8)
        let disk = root + "/" + name
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        try TestApache.giveToServer(disk)
        return (base + name + "/", disk)
    }

    func write(config text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: home + "/.config/tidesync/config.toml"))
    }

    /// Starts `tidesync run` with its stderr in `daemonLog`.
    @discardableResult
    func startDaemon(extraEnvironment: [String: String] = [:], arguments: [String] = []) throws -> ChildProcess {
        // The log is kept when it exists: a test may have named its inode in JOURNAL_STREAM.
        let process = try Binary.start(["run"] + arguments, environment: environment.merging(extraEnvironment) { _, new in new },
                                       log: daemonLog, keepingLog: true)
        daemon = process
        return process
    }

    /// SIGTERM, then waits for the exit (without blocking a test thread); returns the exit status.
    @discardableResult
    func stopDaemon() async -> Int32 {
        guard let daemon else { return -1 }
        kill(daemon.processIdentifier, SIGTERM)
        await waitForExit(daemon)
        return daemon.terminationStatus
    }

    func signal(_ number: Int32) {
        if let daemon { kill(daemon.processIdentifier, number) }
    }

    /// Runs the binary with `arguments`; with `user`, through `setpriv` as that user.
    func tidesync(_ arguments: [String], as user: String? = nil) async throws -> Binary.Result {
        if let user {
            return try await Binary.run("/usr/bin/setpriv", ["--reuid=\(user)", "--regid=nogroup", "--clear-groups", Binary.path!] + arguments,
                                        environment: environment)
        }
        return try await Binary.run(Binary.path!, arguments, environment: environment)
    }

    /// `tidesync status --json`, parsed, with its exit status.
    func statusJSON() async throws -> (status: Int32, json: [String: Any], text: String) {
        let result = try await tidesync(["status", "--json"])
        let json = (try? JSONSerialization.jsonObject(with: Data(result.output.utf8))) as? [String: Any] ?? [:]
        return (result.status, json, result.output)
    }

    /// The first domain of a status document.
    static func firstDomain(_ json: [String: Any]) -> [String: Any] {
        (json["domains"] as? [[String: Any]])?.first ?? [:]
    }

    /// Waits until the daemon reports every domain idle (exit status 0).
    func waitUntilIdle(seconds: Double = 30) async throws -> Bool {
        try await waitUntil(timeout: .milliseconds(Int(seconds * 1000))) { try await statusJSON().status == 0 }
    }

    var log: String { (try? String(contentsOfFile: daemonLog, encoding: .utf8)) ?? "" }
}
