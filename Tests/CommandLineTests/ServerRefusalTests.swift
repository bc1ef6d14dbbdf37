import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The real binary against Apache: a 403 on one item skips that item only; a 401 parks the
/// domain until the password command gives the new password, without a config edit.
@Suite("server refusals against the real binary",
       .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"),
       .enabled(if: TestApache.depthInfinityConfigured,
                "the private Apache is not running (packaging/test.sh starts it)"))
final class ServerRefusalTests {
    @Test("a file the server denies (403) is skipped and reported; the others sync; the domain is not parked")
    func deniedItem() async throws {
        let fixture = try DaemonFixture()
        let collection = try #require(try DaemonFixture.sharedApacheCollection())
        try fixture.configure(url: collection.url, disk: collection.disk)
        // packaging/dav-server.sh denies every name starting with "tidesync-denied" to everyone.
        for name in ["a.txt", "tidesync-denied.txt", "b.txt"] {
            try Data("content of \(name)".utf8).write(to: URL(fileURLWithPath: fixture.local + "/" + name))
        }
        let result = try await fixture.tidesync(["run", "--once"])
        #expect(result.status == 1, "\(result.errors)")
        #expect(result.errors.contains("is not in sync yet"), "an unfinished run, not a failed domain: \(result.errors)")
        #expect(result.errors.contains("tidesync-denied.txt") && result.errors.contains("permission denied"), "\(result.errors)")
        #expect(!result.errors.contains("check the user name and password"), "\(result.errors)")
        for name in ["a.txt", "b.txt"] {
            #expect(FileManager.default.contents(atPath: collection.disk + "/" + name) == Data("content of \(name)".utf8))
        }
        #expect(!FileManager.default.fileExists(atPath: collection.disk + "/tidesync-denied.txt"))
    }

    @Test("a 401 after a password change parks the domain; the password command's new answer is used without a config edit")
    func passwordChanged() async throws {
        let apache = try await PrivateApache.start()
        defer { apache.stopAtEnd() }
        let collection = try apache.collection()
        let fixture = try DaemonFixture()
        let script = fixture.home + "/password.sh"
        func answer(_ password: String) throws {
            // Written whole and renamed, so the daemon never runs half a script.
            try Data("#!/bin/sh\nprintf '%s\\n' '\(password)'\n".utf8).write(to: URL(fileURLWithPath: script + ".new"))
            _ = rename(script + ".new", script)
        }
        try answer(apache.password)
        try fixture.write(config: """
            socket = "\(fixture.socket)"
            [[domain]]
            name = "st"
            local = "~/Cloud"
            remote = "\(collection.url)"
            username = "\(apache.values["TIDESYNC_TEST_DAV_USER"] ?? "tidesync")"
            password_command = "sh \(script)"
            poll_interval = "1s"

            """)
        let config = try String(contentsOfFile: fixture.home + "/.config/tidesync/config.toml", encoding: .utf8)
        try fixture.startDaemon()
        try Data("first".utf8).write(to: URL(fileURLWithPath: fixture.local + "/first.txt"))
        #expect(try await waitUntil(timeout: .seconds(60)) { FileManager.default.fileExists(atPath: collection.disk + "/first.txt") },
                "\(fixture.log.suffix(2000))")

        let newPassword = "changed-" + UUID().uuidString.prefix(8)
        let changed = try await onOwnThread {
            try PrivateApache.shell(["/usr/bin/htpasswd", "-b", "-s", apache.directory + "/htpasswd",
                                     apache.values["TIDESYNC_TEST_DAV_USER"] ?? "tidesync", String(newPassword)])
        }
        try #require(changed.status == 0, "\(changed.errors)")
        try Data("second".utf8).write(to: URL(fileURLWithPath: fixture.local + "/second.txt"))
        let parked = try await waitUntil(timeout: .seconds(60)) { try await fixture.statusJSON().text.contains("notAuthenticated") }
        #expect(parked, "the domain was never parked as not authenticated: \(fixture.log.suffix(2000))")

        try answer(String(newPassword))
        _ = try await fixture.tidesync(["sync-now"])
        let synced = try await waitUntil(timeout: .seconds(60)) { FileManager.default.fileExists(atPath: collection.disk + "/second.txt") }
        #expect(synced, "the new password was never used: \(fixture.log.suffix(2000))")
        #expect(try String(contentsOfFile: fixture.home + "/.config/tidesync/config.toml", encoding: .utf8) == config)
        #expect(fixture.daemon?.isRunning == true, "the same daemon picked the password up")
        await fixture.stopDaemon()
        try await apache.stop()
    }
}
