import Glibc
import Foundation

/// Thin wrappers over the Unix stream socket calls both ends use. Writes never raise
/// SIGPIPE (MSG_NOSIGNAL): a peer that hangs up costs an error, never the process.
enum UnixSocket {
    /// A `sockaddr_un` for `path`; nil when the path does not fit (107 bytes).
    static func address(_ path: String) -> (sockaddr_un, socklen_t)? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + 1
        return (address, socklen_t(length))
    }

    /// A new stream socket, close-on-exec.
    static func stream() -> Int32 {
        socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    }

    /// Sets send and receive timeouts, so a silent peer cannot hold a thread forever.
    static func setTimeouts(_ fd: Int32, seconds: Int) {
        var time = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Writes all of `data`; false when the peer went away or timed out.
    @discardableResult
    static func writeAll(_ fd: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let sent = send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if sent < 0, errno == EINTR { continue }
                guard sent > 0 else { return false }
                offset += sent
            }
            return true
        }
    }

    /// The uid of the process at the other end (SO_PEERCRED); nil if the kernel does not say.
    static func peerUID(_ fd: Int32) -> uid_t? {
        var credentials = PeerCredentials()
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0,
              length == MemoryLayout<PeerCredentials>.size else { return nil }
        return credentials.uid
    }

    /// Linux's `struct ucred`, which Glibc's module map hides without _GNU_SOURCE.
    private struct PeerCredentials {
        var pid: pid_t = 0
        var uid: uid_t = 0
        var gid: gid_t = 0
    }
}

/// Splits what a stream delivers into lines of at most `limit` bytes.
struct LineReader {
    /// What reading found.
    enum Event: Equatable {
        case line(Data)
        /// More than `limit` bytes arrived without a newline.
        case tooLong
        /// The peer closed its side; `rest` is what came after the last newline (may be empty).
        case end(rest: Data)
        /// A read failed or timed out.
        case failed
    }

    let fd: Int32
    let limit: Int
    private var buffer = Data()

    init(fd: Int32, limit: Int) {
        self.fd = fd
        self.limit = limit
    }

    /// The next event; blocks until a line is complete, the limit is passed, or the stream ends.
    mutating func next() -> Event {
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = buffer[buffer.startIndex..<newline]
                buffer = Data(buffer[(newline + 1)...])
                return line.count >= limit ? .tooLong : .line(Data(line))
            }
            if buffer.count >= limit { return .tooLong }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            if count < 0 { return .failed }
            if count == 0 {
                defer { buffer = Data() }
                return .end(rest: buffer)
            }
            buffer.append(contentsOf: chunk[0..<count])
        }
    }
}
