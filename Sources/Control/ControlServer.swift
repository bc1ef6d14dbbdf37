import Glibc
import Foundation
import Logging
import Synchronization

/// The daemon's end of the control socket: a Unix stream socket of mode 0600 that answers
/// requests from processes of the same user (or root), checked with SO_PEERCRED.
///
/// Isolation: one accepting thread, one thread per connection (at most
/// `maximumConnections`; more are told `busy`). A connection is closed after a request
/// that is too long, after 30 s of silence, or when the peer is another user; nothing a
/// peer sends reaches the daemon other than as a parsed `ControlRequest`.
public final class ControlServer: Sendable {
    /// The socket's path.
    public let path: String
    let responder: any ControlResponder
    let logger: Logger
    let listener: Int32
    private let state = Mutex(State())

    /// Connections served at once.
    static let maximumConnections = 16

    private struct State {
        var connections = 0
        var stopped = false
    }

    /// Binds the socket at `path` (creating its directory, mode 0700, if needed) and starts
    /// answering. A stale socket left by a daemon that died is replaced; a live one (another
    /// daemon answers on it) or a non-socket file at `path` is an error that says so.
    public init(path: String, responder: any ControlResponder, logger: Logger) throws(ControlFailure) {
        self.path = path
        self.responder = responder
        self.logger = logger
        listener = try Self.bind(path)
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "tidesync control"
        thread.start()
    }

    /// Stops accepting, removes the socket file. Connections being answered finish.
    public func stop() {
        let wasStopped = state.withLock { state in
            defer { state.stopped = true }
            return state.stopped
        }
        guard !wasStopped else { return }
        unlink(path)
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private static func bind(_ path: String) throws(ControlFailure) -> Int32 {
        guard let (address, length) = UnixSocket.address(path) else {
            throw ControlFailure(.failed, "the control socket path \(path) is longer than 107 bytes; set a shorter `socket` in the config")
        }
        try prepare(path)
        let fd = UnixSocket.stream()
        guard fd >= 0 else { throw ControlFailure(.failed, "cannot create the control socket: \(String(cString: strerror(errno)))") }
        var bound = address
        let result = withUnsafePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
        }
        // chmod before listen: until listen, a connect is refused, so no one gets in through
        // the umask's mode.
        guard result == 0, chmod(path, 0o600) == 0, listen(fd, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw ControlFailure(.failed, "cannot listen on the control socket \(path): \(reason)")
        }
        return fd
    }

    /// Makes room for the socket: creates the directory, removes a stale socket.
    private static func prepare(_ path: String) throws(ControlFailure) {
        let directory = (path as NSString).deletingLastPathComponent
        if !FileManager.default.fileExists(atPath: directory) {
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                     attributes: [.posixPermissions: 0o700])
        }
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        guard st.st_mode & S_IFMT == S_IFSOCK else {
            throw ControlFailure(.failed, "\(path) exists and is not a socket; remove it or set another `socket` in the config")
        }
        if case .success = ControlClient.connect(path) {
            throw ControlFailure(.failed, "another tidesync daemon answers on \(path); stop it first (systemctl --user stop tidesync)")
        }
        unlink(path)
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if state.withLock({ $0.stopped }) { break }
                logger.error("control socket: accept failed: \(String(cString: strerror(errno)))")
                usleep(100_000)
                continue
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            let admitted = state.withLock { state -> Bool in
                guard state.connections < Self.maximumConnections else { return false }
                state.connections += 1
                return true
            }
            guard admitted else {
                UnixSocket.setTimeouts(fd, seconds: 1)
                UnixSocket.writeAll(fd, ControlJSON.line(ControlResponse(failure: ControlFailure(.busy, "too many control connections at once; try again"))))
                close(fd)
                continue
            }
            Thread { [self] in
                serve(fd)
                close(fd)
                state.withLock { $0.connections -= 1 }
            }.start()
        }
        close(listener)
    }

    /// Answers every request line of one connection.
    private func serve(_ fd: Int32) {
        UnixSocket.setTimeouts(fd, seconds: 30)
        let me = getuid()
        guard let peer = UnixSocket.peerUID(fd), peer == me || peer == 0 else {
            let who = UnixSocket.peerUID(fd).map { "uid \($0)" } ?? "an unknown user"
            logger.warning("control socket: refused a connection from \(who) (only uid \(me) and root may connect)")
            UnixSocket.writeAll(fd, ControlJSON.line(ControlResponse(failure: ControlFailure(
                .refused, "this tidesync daemon belongs to uid \(me); connect as that user"))))
            return
        }
        var reader = LineReader(fd: fd, limit: ControlProtocol.maximumRequestBytes)
        while true {
            switch reader.next() {
            case .line(let line):
                guard UnixSocket.writeAll(fd, ControlJSON.line(ControlDispatch.answer(line, responder: responder))) else { return }
            case .tooLong:
                logger.notice("control socket: a request over \(ControlProtocol.maximumRequestBytes) bytes was refused")
                UnixSocket.writeAll(fd, ControlJSON.line(ControlResponse(failure: ControlFailure(
                    .tooLarge, "requests are at most \(ControlProtocol.maximumRequestBytes) bytes"))))
                return
            case .end(let rest):
                if !rest.isEmpty { UnixSocket.writeAll(fd, ControlJSON.line(ControlDispatch.answer(rest, responder: responder))) }
                return
            case .failed:
                return
            }
        }
    }
}
