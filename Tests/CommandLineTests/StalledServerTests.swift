import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A server that trickles never holds the real daemon: `run --once` gives up within a bound
/// several times the configured low-speed time, and a second SIGTERM abandons a stuck
/// transfer, whose temporary the next start removes.
@Suite("a stalled server against the real binary",
       .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"),
       .enabled(if: FileManager.default.isExecutableFile(atPath: TricklingServer.python), "needs python3 for the trickling server"))
final class StalledServerTests {
    let fixture: DaemonFixture
    let server: TricklingServer

    init() async throws {
        let fixture = try DaemonFixture()
        // Started off the test threads: python may take seconds to come up on a loaded machine.
        server = try await onOwnThread { [home = fixture.home] in try TricklingServer(directory: home) }
        self.fixture = fixture
    }

    deinit { server.stop() }

    func configure(lowSpeedTime: String) throws {
        try fixture.write(config: """
            socket = "\(fixture.socket)"
            [[domain]]
            name = "st"
            local = "~/Cloud"
            remote = "\(server.url)"
            poll_interval = "1h"
            connect_timeout = "2s"
            low_speed_limit = "1KiB"
            low_speed_time = "\(lowSpeedTime)"

            """)
    }

    @Test("run --once against a server that answers one byte a second exits 1 with a message, within the bound")
    func runOnceGivesUp() async throws {
        try server.setMode("trickle-all")
        try configure(lowSpeedTime: "3s")
        let start = ContinuousClock.now
        let log = fixture.home + "/run-once.log"
        let process = try Binary.start(["run", "--once"], environment: fixture.environment, log: log)
        // Generous: 20 times the configured low-speed time. Killed after it, so a
        // regression fails here instead of hanging the suite.
        let exited = await waitOnOwnThread(for: process, timeout: .seconds(60)) { !process.isRunning }
        if !exited { kill(process.processIdentifier, SIGKILL) }
        await waitForExit(process)
        let text = readFile(log) ?? ""
        #expect(exited, "run --once was still waiting on the trickling server after \(ContinuousClock.now - start)")
        #expect(process.terminationStatus == 1, "\(text)")
        #expect(text.contains("too slowly"), "\(text)")
        #expect(server.requestCount > 0)
    }

    @Test("a second SIGTERM abandons a stuck download at once; the next start removes its temporary and finishes")
    func secondSignalAbandons() async throws {
        try server.setMode("trickle-get")
        try configure(lowSpeedTime: "30m")  // the check cannot end this download: only the signals can
        let daemon = try fixture.startDaemon()
        let downloading = await waitOnOwnThread(for: daemon, timeout: .seconds(120)) { [local = fixture.local] in
            let names = (try? FileManager.default.contentsOfDirectory(atPath: local)) ?? []
            return names.contains { $0.hasPrefix(".tidesync-part-") }
        }
        try #require(downloading, "the download never started: \(fixture.log)")
        fixture.signal(SIGTERM)
        let first = try await waitUntil(timeout: .seconds(30)) { self.fixture.log.contains("finishing running transfers") }
        #expect(first, "\(fixture.log)")
        #expect(daemon.isRunning, "the first SIGTERM is meant to wait for the running download")
        fixture.signal(SIGTERM)
        let exited = await waitOnOwnThread(for: daemon, timeout: .seconds(30)) { !daemon.isRunning }
        if !exited { kill(daemon.processIdentifier, SIGKILL) }
        await waitForExit(daemon)
        #expect(exited, "the daemon did not exit after the second SIGTERM: \(fixture.log)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.local).contains { $0.hasPrefix(".tidesync-part-") },
                "the abandoned download left no temporary, so this test checks no cleanup")

        try server.setMode("fast")
        try configure(lowSpeedTime: "30s")
        let again = try await fixture.tidesync(["run", "--once"])
        #expect(again.status == 0, "\(again.errors)")
        let names = try FileManager.default.contentsOfDirectory(atPath: fixture.local)
        #expect(!names.contains { $0.hasPrefix(".tidesync-part-") }, "\(names)")
        #expect(FileManager.default.contents(atPath: fixture.local + "/big.bin") == Data(TricklingServer.body.utf8))
    }
}

/// A tiny WebDAV-ish server in python3 on 127.0.0.1 whose pace the test sets through a
/// mode file: `trickle-all` answers everything one byte a second, `trickle-get` answers
/// the probe and listings at once but GET bodies one byte a second, `fast` answers at once.
/// It serves one file, `big.bin`.
final class TricklingServer {
    static let python = "/usr/bin/python3"
    static let body = String(repeating: "0123456789abcdef", count: 4096)
    let process: ChildProcess
    let directory: String
    let port: Int

    var url: String { "http://127.0.0.1:\(port)/dav/" }
    var requestCount: Int {
        ((try? String(contentsOfFile: directory + "/trickle.log", encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    init(directory: String) throws {
        self.directory = directory
        try Data("fast".utf8).write(to: URL(fileURLWithPath: directory + "/trickle.mode"))
        try Data(Self.script.utf8).write(to: URL(fileURLWithPath: directory + "/trickle.py"))
        process = try ChildProcess(Self.python, [directory + "/trickle.py", directory, "\(Self.body.utf8.count)"])
        let portFile = directory + "/trickle.port"
        var found: Int?
        let end = ContinuousClock.now + .seconds(30)
        while found == nil, ContinuousClock.now < end, process.isRunning {
            found = (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            if found == nil { usleep(20_000) }  // polling for the port file the server writes once it listens
        }
        guard let found else {
            process.terminate()
            throw POSIXError(.ECONNREFUSED)
        }
        port = found
    }

    func setMode(_ mode: String) throws {
        try Data(mode.utf8).write(to: URL(fileURLWithPath: directory + "/trickle.mode"))
    }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    static let script = #"""
import os, socket, sys, threading, time
directory, size = sys.argv[1], int(sys.argv[2])
body = (b"0123456789abcdef" * (size // 16 + 1))[:size]
listing = ('<?xml version="1.0" encoding="utf-8"?><d:multistatus xmlns:d="DAV:">'
  '<d:response><d:href>/dav/</d:href><d:propstat><d:prop><d:resourcetype><d:collection/></d:resourcetype>'
  '<d:getetag>"root"</d:getetag></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>'
  '<d:response><d:href>/dav/big.bin</d:href><d:propstat><d:prop><d:resourcetype/>'
  '<d:getcontentlength>%d</d:getcontentlength><d:getetag>"v1"</d:getetag>'
  '<d:getlastmodified>Mon, 02 Nov 2026 10:00:00 GMT</d:getlastmodified></d:prop>'
  '<d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus>' % size).encode()

def mode():
    with open(directory + "/trickle.mode") as f: return f.read().strip()

def send(conn, data, slow):
    if not slow:
        conn.sendall(data); return
    for i in range(len(data)):
        conn.sendall(data[i:i + 1]); time.sleep(1)

def serve(conn):
    pending = b""
    try:
        while True:
            while b"\r\n\r\n" not in pending:
                more = conn.recv(65536)
                if not more: return
                pending += more
            head, pending = pending.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            method = lines[0].split(" ")[0]
            headers = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
            length = int(headers.get("content-length", "0"))
            while len(pending) < length:
                more = conn.recv(65536)
                if not more: return
                pending += more
            pending = pending[length:]
            with open(directory + "/trickle.log", "a") as log: log.write(method + " " + lines[0].split(" ")[1] + "\n")
            current = mode()
            if method == "PUT": status, extra, content = "412 Precondition Failed", "", b""
            elif method == "PROPFIND": status, extra, content = "207 Multi-Status", "Content-Type: application/xml\r\n", listing
            elif method in ("GET", "HEAD"): status, extra, content = "200 OK", 'ETag: "v1"\r\n', body
            else: status, extra, content = "405 Method Not Allowed", "", b""
            answer_head = ("HTTP/1.1 %s\r\nContent-Length: %d\r\n%s\r\n" % (status, len(content), extra)).encode()
            if method == "HEAD": content = b""
            send(conn, answer_head, current == "trickle-all")
            send(conn, content, current == "trickle-all" or (current == "trickle-get" and method == "GET"))
    except OSError:
        return
    finally:
        conn.close()

listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(16)
with open(directory + "/trickle.port.tmp", "w") as f: f.write(str(listener.getsockname()[1]))
os.rename(directory + "/trickle.port.tmp", directory + "/trickle.port")
while True:
    conn, _ = listener.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
"""#
}
