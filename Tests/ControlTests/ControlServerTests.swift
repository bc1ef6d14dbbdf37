@testable import Control
import Foundation
import Logging
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A raw client: connects, writes bytes, reads one answer line. For feeding the server what
/// no well-behaved client sends.
struct RawClient {
    let fd: Int32

    init(_ path: String) throws {
        guard case .success(let fd) = ControlClient.connect(path) else { throw ControlFailure(.failed, "cannot connect to \(path)") }
        self.fd = fd
        UnixSocket.setTimeouts(fd, seconds: 10)
    }

    func write(_ data: Data) -> Bool { UnixSocket.writeAll(fd, data) }
    func closeWriting() { shutdown(fd, Int32(SHUT_WR)) }

    func readAnswer() throws -> ControlResponse {
        var reader = LineReader(fd: fd, limit: 1 << 20)
        guard case .line(let line) = reader.next() else { throw ControlFailure(.failed, "no answer line") }
        return try ControlJSON.decoder().decode(ControlResponse.self, from: line)
    }

    func close() { Glibc.close(fd) }
}

@Suite("control server on a real socket", .serialized) final class ControlServerTests {
    let directory: String
    let path: String
    let server: ControlServer
    let responder = FakeResponder()

    init() throws {
        directory = temporaryPath("tidesync-control-", short: true)
        path = directory + "/run/tidesync.sock"
        server = try ControlServer(path: path, responder: responder, logger: Logger(label: "test"))
    }

    deinit {
        server.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    func status() throws -> ControlResponse {
        try ControlClient.send(ControlRequest(.status), to: path).get()
    }

    @Test func theSocketIsOnlyForItsOwnerAndAnswersStatus() throws {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try status().status?.domains.count == 2)
    }

    @Test func oneConnectionCarriesSeveralRequestsAndSurvivesGarbage() throws {
        let client = try RawClient(path)
        defer { client.close() }
        #expect(client.write(Data("this is not json\n".utf8)))
        #expect(try client.readAnswer().error?.code == .badRequest)
        #expect(client.write(Data(#"{"version":1,"command":"status"}"#.utf8 + [0x0A])))
        #expect(try client.readAnswer().ok)
    }

    @Test func truncatedJSONAtTheEndOfTheStreamGetsAnErrorAnswer() throws {
        let client = try RawClient(path)
        defer { client.close() }
        #expect(client.write(Data(#"{"version":1,"command":"sta"#.utf8)))
        client.closeWriting()
        #expect(try client.readAnswer().error?.code == .badRequest)
        #expect(try status().ok)
    }

    @Test func aHundredMegabyteRequestIsRefusedAndTheServerGoesOn() throws {
        let client = try RawClient(path)
        defer { client.close() }
        let block = Data(repeating: UInt8(ascii: "a"), count: 1 << 20)
        // The server stops reading after its limit; the writes then fail, which is expected.
        var written = 0
        for _ in 0..<100 {
            guard client.write(block) else { break }
            written += 1
        }
        #expect(written < 100, "the server read all 100 MB")
        #expect(try client.readAnswer().error?.code == .tooLarge)
        #expect(try status().ok)
    }

    @Test func aStaleSocketIsReplacedAndALiveOneIsNot() throws {
        #expect(throws: ControlFailure.self) {
            _ = try ControlServer(path: path, responder: responder, logger: Logger(label: "test"))
        }
        #expect(try status().ok)
        // A socket file no one listens on (a daemon that was killed) is taken over.
        let stale = directory + "/stale.sock"
        let fd = UnixSocket.stream()
        var (address, length) = try #require(UnixSocket.address(stale))
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        Glibc.close(fd)
        let second = try ControlServer(path: stale, responder: responder, logger: Logger(label: "test"))
        defer { second.stop() }
        #expect(try ControlClient.send(ControlRequest(.status), to: stale).get().ok)
    }

    @Test func aClientTurnedAwayBeforeItsRequestIsWrittenStillHearsWhy() throws {
        // Every slot taken by a connection that sends nothing: the next one is told `busy`
        // and closed without being read, often before the client has written its request.
        let held = try (0..<ControlServer.maximumConnections).map { _ in try RawClient(path) }
        defer { held.forEach { $0.close() } }
        for _ in 0..<20 {
            #expect(try ControlClient.send(ControlRequest(.status), to: path).get().error?.code == .busy)
        }
    }

    @Test func aClientOfAStoppedServerHearsNotRunning() throws {
        server.stop()
        #expect(throws: ControlClient.Failure.notRunning) { try status() }
    }
}
