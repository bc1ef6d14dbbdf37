@testable import Control
import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The daemon as a service: its socket against hostile and foreign peers, systemd's notify
/// protocol and journal, SIGHUP, and the files shipped for people (unit, man page, completions).
@Suite("the daemon as a service", .serialized,
       .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"))
final class ServiceTests {
    let fixture: DaemonFixture

    init() throws {
        fixture = try DaemonFixture()
        // No polling: tests sample status after `waitUntilIdle`, and a poll pass in between
        // would show as syncing (exit 1). Nothing here changes the remote.
        try fixture.configure(poll: "1h")
    }

    @Test("garbage, truncated JSON and a 100 MB request get errors; the daemon goes on")
    func socketSurvivesAbuse() async throws {
        let daemon = try fixture.startDaemon()
        #expect(try await fixture.waitUntilIdle())
        let garbage = try RawConnection(fixture.socket)
        #expect(garbage.send(Data("\u{0}\u{ff}not json at all\n".utf8)))
        #expect(try garbage.answer().error?.code == .badRequest)
        garbage.close()

        let truncated = try RawConnection(fixture.socket)
        #expect(truncated.send(Data(#"{"version":1,"command":"stat"#.utf8)))
        truncated.finish()
        #expect(try truncated.answer().error?.code == .badRequest)
        truncated.close()

        let huge = try RawConnection(fixture.socket)
        let block = Data(repeating: UInt8(ascii: "{"), count: 1 << 20)
        var sent = 0
        while sent < 100, huge.send(block) { sent += 1 }
        #expect(try huge.answer().error?.code == .tooLarge)
        huge.close()

        #expect(daemon.isRunning)
        #expect(try await fixture.statusJSON().status == 0)
    }

    @Test("another uid cannot use the socket: the file mode stops it, and so does SO_PEERCRED",
          .enabled(if: getuid() == 0, "needs root to run a client as nobody (setpriv); packaging/test.sh runs as root in CI"))
    func otherUsersAreRefused() async throws {
        guard access(Binary.path!, X_OK) == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else {
            Issue.record("setpriv or the binary is missing")
            return
        }
        try fixture.startDaemon()
        #expect(try await fixture.waitUntilIdle())
        chmod(fixture.home, 0o755)
        chmod(fixture.home + "/run", 0o755)
        let byMode = try await fixture.tidesync(["status", "--socket", fixture.socket], as: "nobody")
        #expect(byMode.status == 4, "\(byMode.output) \(byMode.errors)")
        #expect(byMode.errors.contains("permission denied"), "\(byMode.errors)")
        // With the file opened up, the daemon itself still refuses the peer.
        chmod(fixture.socket, 0o666)
        let byCredentials = try await fixture.tidesync(["status", "--socket", fixture.socket], as: "nobody")
        #expect(byCredentials.status == 4)
        #expect(byCredentials.errors.contains("belongs to uid 0"), "\(byCredentials.errors)")
        #expect(fixture.log.contains("refused a connection from uid 65534"))
        #expect(try await fixture.statusJSON().status == 0)
    }

    @Test("READY=1 after the first pass and STATUS= lines reach NOTIFY_SOCKET; journal lines have priorities, no time")
    func notifyAndJournal() async throws {
        let listener = try DatagramListener(path: fixture.home + "/notify")
        try Data("x".utf8).write(to: URL(fileURLWithPath: fixture.local + "/x.txt"))
        // JOURNAL_STREAM names the daemon's stderr (the log file) as systemd would.
        #expect(FileManager.default.createFile(atPath: fixture.daemonLog, contents: nil))
        var st = stat()
        #expect(stat(fixture.daemonLog, &st) == 0)
        try fixture.startDaemon(extraEnvironment: ["NOTIFY_SOCKET": listener.path, "JOURNAL_STREAM": "\(st.st_dev):\(st.st_ino)"])
        var messages: [String] = []
        #expect(try await waitUntil(timeout: .seconds(20)) {
            messages += listener.receive()
            return messages.contains { $0.contains("READY=1") } && messages.contains { $0.contains("STATUS=Synced") }
        }, "messages: \(messages)")
        await fixture.stopDaemon()
        messages += listener.receive()
        #expect(messages.contains { $0.contains("STOPPING=1") }, "messages: \(messages)")
        let lines = fixture.log.split(separator: "\n")
        #expect(!lines.isEmpty)
        #expect(lines.allSatisfy { $0.hasPrefix("<") }, "\(lines.prefix(3))")
        #expect(lines.contains { $0.hasPrefix("<6>") && $0.contains("started") })
    }

    @Test("SIGHUP: a bad config is reported and the old one kept; a good one adds a domain")
    func reload() async throws {
        try fixture.startDaemon()
        #expect(try await fixture.waitUntilIdle())
        let config = try String(contentsOfFile: fixture.home + "/.config/tidesync/config.toml", encoding: .utf8)
        try fixture.write(config: config + "\nthis is = = not toml\n")
        fixture.signal(SIGHUP)
        #expect(try await waitUntil(timeout: .seconds(10)) { fixture.log.contains("was not reloaded") }, "\(fixture.log)")
        // The file is broken, so the socket is named on the command line.
        #expect(try await fixture.tidesync(["status", "--socket", fixture.socket]).status == 0)
        try FileManager.default.createDirectory(atPath: fixture.home + "/Two", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: fixture.home + "/store2", withIntermediateDirectories: true)
        try fixture.write(config: config + "\n[[domain]]\nname = \"two\"\nlocal = \"~/Two\"\nremote = \"file://\(fixture.home)/store2\"\npoll_interval = \"1h\"\n")
        fixture.signal(SIGHUP)
        #expect(try await waitUntil(timeout: .seconds(15)) {
            let json = try await fixture.statusJSON()
            return (json.json["domains"] as? [[String: Any]])?.count == 2 && json.status == 0
        }, "\(fixture.log)")
    }

    @Test("systemd-analyze verify accepts the unit (with the man page it names)")
    func unitVerifies() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") else {
            Issue.record("systemd-analyze is missing; packaging/install-deps.sh installs the systemd package")
            return
        }
        let unit = try String(contentsOfFile: DaemonFixture.repository + "/packaging/systemd/tidesync.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/local/bin/tidesync run"))
        #expect(unit.contains("Type=notify"))
        // The binary under test stands in for the installed one.
        try Data(unit.replacingOccurrences(of: "/usr/local/bin/tidesync", with: Binary.path!).utf8)
            .write(to: URL(fileURLWithPath: fixture.home + "/tidesync.service"))
        try FileManager.default.createDirectory(atPath: fixture.home + "/man/man1", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: DaemonFixture.repository + "/packaging/man/tidesync.1", toPath: fixture.home + "/man/man1/tidesync.1")
        let result = try await Binary.run("/usr/bin/systemd-analyze", ["verify", fixture.home + "/tidesync.service"],
                             environment: ["MANPATH": fixture.home + "/man", "PATH": "/usr/bin:/bin"])
        #expect(result.status == 0, "\(result.output)\(result.errors)")
        #expect(result.errors.isEmpty, "\(result.errors)")
    }

    @Test("the man page renders without warnings")
    func manPage() async throws {
        let result = try await Binary.run("/usr/bin/groff", ["-man", "-ww", "-z", DaemonFixture.repository + "/packaging/man/tidesync.1"], environment: nil)
        #expect(result.status == 0)
        #expect(result.errors.isEmpty, "\(result.errors)")
        let page = try String(contentsOfFile: DaemonFixture.repository + "/packaging/man/tidesync.1", encoding: .utf8)
        for word in ["status", "conflicts", "pause", "resume", "sync\\-now", "allow\\-deletions", "check\\-config",
                     "file\\-status", "hydrate", "evict", "unpin", "log_level", "socket", "state_dir",
                     "poll_interval", "max_delete", "EXIT STATUS", "SIGHUP"] {
            #expect(page.contains(word), "the man page does not mention \(word)")
        }
    }

    @Test("the shipped completions are what the binary generates", arguments: [("bash", "tidesync.bash"), ("zsh", "_tidesync"), ("fish", "tidesync.fish")])
    func completions(shell: String, file: String) async throws {
        let generated = try await fixture.tidesync(["--generate-completion-script", shell])
        let shipped = try String(contentsOfFile: DaemonFixture.repository + "/packaging/completions/" + file, encoding: .utf8)
        #expect(generated.output == shipped, "run bash packaging/completions/generate.sh")
    }
}

/// A connection that sends whatever bytes a test likes.
struct RawConnection {
    let fd: Int32

    init(_ path: String) throws {
        guard case .success(let fd) = ControlClient.connect(path) else { throw ControlFailure(.failed, "cannot connect to \(path)") }
        self.fd = fd
        UnixSocket.setTimeouts(fd, seconds: 10)
    }

    func send(_ data: Data) -> Bool { UnixSocket.writeAll(fd, data) }
    func finish() { shutdown(fd, Int32(SHUT_WR)) }
    func close() { Glibc.close(fd) }

    func answer() throws -> ControlResponse {
        var reader = LineReader(fd: fd, limit: 1 << 20)
        guard case .line(let line) = reader.next() else { throw ControlFailure(.failed, "no answer") }
        return try ControlJSON.decoder().decode(ControlResponse.self, from: line)
    }
}

/// A datagram socket standing in for systemd's notify socket.
final class DatagramListener {
    let path: String
    let fd: Int32

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var (address, length) = try #require(UnixSocket.address(path))
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0 else { throw ControlFailure(.failed, "cannot bind \(path)") }
    }

    deinit { Glibc.close(fd); unlink(path) }

    /// Every datagram waiting now.
    func receive() -> [String] {
        var messages: [String] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard count > 0 else { return messages }
            messages.append(String(decoding: buffer.prefix(count), as: UTF8.self))
        }
    }
}
