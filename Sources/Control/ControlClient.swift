import Glibc
import Foundation

/// The command line's end of the control socket: one request, one answer.
public enum ControlClient {
    /// Why no answer came.
    public enum Failure: Error, Equatable {
        /// No daemon listens at the path (no socket file, or a stale one).
        case notRunning
        /// The socket is there but this user may not use it.
        case permissionDenied(String)
        /// The daemon refused or garbled the exchange; the message says what happened.
        case failed(String)
    }

    /// Sends `request` to the daemon listening at `path` and returns its answer.
    public static func send(_ request: ControlRequest, to path: String, timeoutSeconds: Int = 30) -> Result<ControlResponse, Failure> {
        let fd: Int32
        switch connect(path) {
        case .success(let connected): fd = connected
        case .failure(let failure): return .failure(failure)
        }
        defer { close(fd) }
        UnixSocket.setTimeouts(fd, seconds: timeoutSeconds)
        // A daemon that refuses the peer (another uid, too many connections) answers and
        // closes without reading: the write can fail while its answer waits to be read.
        let sent = UnixSocket.writeAll(fd, ControlJSON.line(request))
        var reader = LineReader(fd: fd, limit: ControlProtocol.maximumAnswerBytes)
        let line: Data
        switch reader.next() {
        case .line(let answer): line = answer
        case .end(let rest) where !rest.isEmpty: line = rest
        case .end where !sent, .failed where !sent:
            return .failure(.failed("the daemon at \(path) closed the connection before the request was sent"))
        case .end: return .failure(.failed("the daemon at \(path) closed the connection without answering"))
        case .tooLong: return .failure(.failed("the daemon's answer is longer than \(ControlProtocol.maximumAnswerBytes) bytes"))
        case .failed: return .failure(.failed("no answer from the daemon at \(path) within \(timeoutSeconds) s"))
        }
        do {
            return .success(try ControlJSON.decoder().decode(ControlResponse.self, from: line))
        } catch {
            return .failure(.failed("the daemon at \(path) sent an answer this tidesync cannot read (\(error)); are both the same version?"))
        }
    }

    /// A connected socket, or why not.
    static func connect(_ path: String) -> Result<Int32, Failure> {
        guard let (address, length) = UnixSocket.address(path) else {
            return .failure(.failed("the control socket path \(path) is longer than 107 bytes"))
        }
        let fd = UnixSocket.stream()
        guard fd >= 0 else { return .failure(.failed("cannot create a socket: \(String(cString: strerror(errno)))")) }
        var target = address
        let result = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            switch code {
            case ENOENT, ECONNREFUSED, ENOTDIR: return .failure(.notRunning)
            case EACCES, EPERM:
                return .failure(.permissionDenied("cannot use the control socket \(path): permission denied (it belongs to the user running the daemon)"))
            default:
                return .failure(.failed("cannot connect to the control socket \(path): \(String(cString: strerror(code)))"))
            }
        }
        return .success(fd)
    }
}
