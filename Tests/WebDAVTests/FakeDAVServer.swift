#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// A tiny HTTP/1.1 server on 127.0.0.1 whose every answer comes from `respond`: enough to
/// play a WebDAV server with a given defect. Sockets are served on threads of their own,
/// never on Swift's cooperative pool.
final class FakeDAVServer: Sendable {
    struct Request: Sendable {
        var method: String
        var path: String
        var headers: [String: String]  // names lowercased
    }

    struct Response: Sendable {
        var status: Int
        var headers: [(String, String)] = []
        var body = ""
        /// When set, the body sent instead of `body` (binary answers: an image).
        var bytes: [UInt8]? = nil
        /// When set, the answer (head and body) is sent this many bytes a second, one
        /// byte at a time: a server that trickles.
        var bytesPerSecond: Int? = nil
        /// With `bytesPerSecond`: the head is sent at once, only the body trickles.
        var trickleBodyOnly = false
        /// Closes the connection without a word, as a server does with a kept-alive
        /// connection whose idle time ran out just as the request came.
        var hangUp = false
    }

    let port: UInt16
    private let listener: Int32
    private let log = Mutex<[Request]>([])
    private let respond: @Sendable (Request) -> Response

    /// Before reading a body above 1 MiB, the server waits this long (a busy server that
    /// has not begun the request yet); `bodyBytesRead` counts body bytes read so far.
    private let largeBodyPause: useconds_t
    private let bodyBytes = Mutex(0)

    var requests: [Request] { log.withLock { $0 } }

    /// Every request head read, in order, with the number of the connection it came on
    /// (counted from 1 as accepted) and its declared body length: also requests whose body
    /// never came whole, which `requests` leaves out.
    var heads: [(connection: Int, method: String, length: Int)] { headLog.withLock { $0 } }
    private let headLog = Mutex<[(connection: Int, method: String, length: Int)]>([])
    private let accepted = Mutex(0)
    var url: URL { URL(string: "http://127.0.0.1:\(port)/dav/")! }
    var bodyBytesRead: Int { bodyBytes.withLock { $0 } }

    /// A body longer than this is answered 413 before it is read, and the connection closed
    /// once the client stops sending (as nginx does above its `client_max_body_size`).
    private let refusedBodiesOver: Int

    /// The `Server` header of every answer.
    private let serverName: String

    init(largeBodyPause: useconds_t = 0, refusedBodiesOver: Int = .max, serverName: String = "FakeDAV/1.0",
         respond: @escaping @Sendable (Request) -> Response) throws {
        self.respond = respond
        self.serverName = serverName
        self.largeBodyPause = largeBodyPause
        self.refusedBodiesOver = refusedBodiesOver
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard bound == 0, named == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        let listener = fd
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 {
                    if errno == EINTR { continue }
                    // Stopped. The descriptor is closed here, after the last accept: closed
                    // in `stop`, its number could go to the next test's listener while this
                    // thread was between two accepts, and this thread would take that
                    // server's connections and answer them as this one.
                    close(listener)
                    return
                }
                let number = accepted.withLock { count in
                    count += 1
                    return count
                }
                Thread.detachNewThread { [self] in serve(client, number: number) }
            }
        }
    }

    /// Stops accepting (the accepting thread wakes and closes the listener); connections
    /// end when the client closes them.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func serve(_ client: Int32, number: Int) {
        defer { close(client) }
        var pending = [UInt8]()
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        while true {
            var headerEnd: Int?
            while headerEnd == nil {
                if let end = Self.find(separator, in: pending) { headerEnd = end; break }
                guard let more = Self.read(client) else { return }
                pending += more
            }
            let head = String(decoding: pending[..<headerEnd!], as: UTF8.self)
            pending.removeFirst(headerEnd! + separator.count)
            var lines = head.components(separatedBy: "\r\n")
            let requestLine = lines.removeFirst().split(separator: " ")
            guard requestLine.count >= 2 else { return }
            var headers: [String: String] = [:]
            for line in lines {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let length = Int(headers["content-length"] ?? "0") ?? 0
            headLog.withLock { $0.append((number, String(requestLine[0]), length)) }
            if length > refusedBodiesOver {
                log.withLock { $0.append(Request(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers)) }
                let refusal = Array("HTTP/1.1 413 Fake\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
                _ = refusal.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                // nginx's lingering close: what comes is read and dropped until the client
                // closes, so the answer is not lost to a reset.
                shutdown(client, Int32(SHUT_WR))
                while Self.read(client) != nil {}
                return
            }
            // The pace of a busy server, not a wait for an event.
            if length > 1 << 20, largeBodyPause > 0 { usleep(largeBodyPause) }
            bodyBytes.withLock { $0 += min(pending.count, length) }
            while pending.count < length {
                guard let more = Self.read(client) else { return }
                pending += more
                bodyBytes.withLock { $0 += more.count }
            }
            pending.removeFirst(length)
            let request = Request(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers)
            log.withLock { $0.append(request) }
            let response = respond(request)
            if response.hangUp { return }
            let body = response.bytes ?? Array(response.body.utf8)
            var text = "HTTP/1.1 \(response.status) Fake\r\nServer: \(serverName)\r\nContent-Length: \(body.count)\r\n"
            for (name, value) in response.headers { text += "\(name): \(value)\r\n" }
            let bytes = Array((text + "\r\n").utf8) + body
            var sent = 0
            let trickleFrom = response.trickleBodyOnly ? bytes.count - body.count : 0
            while sent < bytes.count {
                let piece = response.bytesPerSecond == nil ? bytes.count - sent : sent < trickleFrom ? trickleFrom - sent : 1
                let n = bytes[sent..<sent + piece].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { return }
                sent += n
                // The pace of a trickling server, not a wait for an event.
                if let rate = response.bytesPerSecond, sent > trickleFrom { usleep(useconds_t(1_000_000 / max(1, rate))) }
            }
        }
    }

    private static func read(_ client: Int32) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
        return n > 0 ? Array(buffer[..<n]) : nil
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        return (0...(haystack.count - needle.count)).first { haystack[$0..<$0 + needle.count].elementsEqual(needle) }
    }

    /// A 207 describing `/dav/` as an empty collection.
    /// A PROPFIND answer for one file `name` of 3 bytes right under the root.
    static func file(_ name: String) -> Response {
        Response(status: 207, headers: [("Content-Type", "application/xml; charset=utf-8")], body: """
            <?xml version="1.0" encoding="utf-8"?>
            <d:multistatus xmlns:d="DAV:"><d:response><d:href>/dav/\(name)</d:href><d:propstat><d:prop>\
            <d:resourcetype/><d:getcontentlength>3</d:getcontentlength><d:getetag>"e1"</d:getetag></d:prop>\
            <d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus>
            """)
    }

    /// The answer to a PROPFIND of the write-guard probe's scratch file (a file with an
    /// ETag), nil for any other request: the probe lists the file it made.
    static func probeListing(_ request: Request) -> Response? {
        guard request.method == "PROPFIND", let name = request.path.split(separator: "/").last,
              name.hasPrefix(".tidesync-tmp-probe-") else { return nil }
        return file(String(name))
    }

    static let emptyRoot = Response(status: 207, headers: [("Content-Type", "application/xml; charset=utf-8")], body: """
        <?xml version="1.0" encoding="utf-8"?>
        <d:multistatus xmlns:d="DAV:"><d:response><d:href>/dav/</d:href><d:propstat><d:prop>\
        <d:resourcetype><d:collection/></d:resourcetype></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus>
        """)
}
