import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import SyncEngine
import Synchronization

/// Where and how to reach a WebDAV server. The password is only ever put in the
/// `Authorization` header; `description` redacts it.
public struct WebDAVEndpoint: Sendable, CustomStringConvertible {
    /// The collection that is the store's root, e.g. `https://cloud.example.com/remote.php/dav/files/alice/`.
    public let baseURL: URL
    public let username: String?
    let password: String?
    /// Maps paths below `baseURL` to request paths and back.
    let paths: WebDAVPath
    /// The certificates trusted beyond the system's (`https://` only).
    public var trust = ServerTrust.system

    /// Fails with `notAuthenticated`-free, user-facing `cannotSynchronize` errors for an
    /// unusable URL: not http(s), no host, credentials in the URL, or plain HTTP to a
    /// host other than loopback without `allowInsecureHTTP`.
    public init(baseURL: URL, username: String?, password: String?, allowInsecureHTTP: Bool) throws(ProviderError) {
        guard let scheme = baseURL.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw ProviderError(.cannotSynchronize, "the remote URL must start with https:// (or http:// for loopback)")
        }
        guard let host = baseURL.host, !host.isEmpty else {
            throw ProviderError(.cannotSynchronize, "the remote URL has no host name")
        }
        guard baseURL.user == nil, baseURL.password == nil else {
            throw ProviderError(.cannotSynchronize, "the remote URL must not hold a user name or password; use username and password_command instead")
        }
        if scheme == "http", !allowInsecureHTTP, !Self.isLoopback(host) {
            throw ProviderError(.cannotSynchronize,
                                "refusing plain http:// to \(host): passwords would cross the network unencrypted; use https:// or set allow_insecure_http = true")
        }
        self.baseURL = baseURL
        paths = try WebDAVPath(encodedBasePath: baseURL.path(percentEncoded: true).isEmpty ? "/" : baseURL.path(percentEncoded: true))
        self.username = username
        self.password = password
    }

    /// True for `localhost`, `::1` and IPv4 literals in 127.0.0.0/8 — not for names
    /// that merely start with "127." (`127.evil.example`).
    static func isLoopback(_ host: String) -> Bool {
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).lowercased()
        if bare == "localhost" || bare == "::1" { return true }
        let octets = bare.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets.allSatisfy { UInt8($0) != nil && !$0.hasPrefix("+") } && octets[0] == "127"
    }

    /// The base URL without credentials, for logs and status.
    public var description: String { baseURL.absoluteString }

    var authorization: String? {
        guard let username else { return nil }
        return Self.basicAuthorization(username: username, password: password)
    }

    static func basicAuthorization(username: String, password: String?) -> String {
        "Basic " + Data("\(username):\(password ?? "")".utf8).base64EncodedString()
    }

    /// True for an IPv4 or IPv6 literal (never sent as a TLS server name).
    static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        return inet_pton(AF_INET, bare, &v4) == 1 || inet_pton(AF_INET6, bare, &v6) == 1
    }

    /// The host and port TLS connections go to.
    var hostAndPort: (host: String, port: Int) {
        (baseURL.host!.trimmingCharacters(in: CharacterSet(charactersIn: "[]")),
         baseURL.port ?? (baseURL.scheme?.lowercased() == "https" ? 443 : 80))
    }

    /// `scheme://host:port`, the origin requests go to.
    var origin: String {
        let host = baseURL.host!
        var text = "\(baseURL.scheme!.lowercased())://" + (host.contains(":") ? "[\(host)]" : host)
        if let port = baseURL.port { text += ":\(port)" }
        return text
    }
}

/// Reads the password anew (runs `password_command` again); nil for no password.
public typealias PasswordSource = @Sendable () throws(ProviderError) -> String?

/// The `Authorization` header requests carry, and whether the server refused it: after a
/// 401 the next request asks the password source again, so a password changed in the
/// keyring is picked up without a restart or a config edit.
struct Credentials {
    var header: String?
    var refused = false
    /// The password source running now, on a thread of its own; every request that
    /// needs its answer waits for this one run.
    var refreshing: Task<Result<String?, ProviderError>, Never>?
}

/// A response whose body was collected into memory (metadata requests only).
struct CollectedResponse: Sendable {
    var status: HTTPResponseStatus
    var headers: HTTPHeaders
    var body: Data
}

/// Sends requests to one server over a pool of kept-alive connections; owns the
/// `HTTPClient` (decompression off, redirects not followed) and must be shut down.
final class WebDAVConnection: Sendable {
    let endpoint: WebDAVEndpoint
    /// The HTTP client; made at the first request when a certificate is pinned (its
    /// settings need the server's chain), at once otherwise.
    private let clients: Mutex<(client: HTTPClient, configuration: HTTPClient.Configuration)?>
    private let configuration: HTTPClient.Configuration
    /// The largest metadata answer accepted (a hostile server cannot exhaust memory).
    static let maximumMetadataBytes = 256 << 20
    /// The most a metadata exchange may take, however fast its bytes come.
    static let metadataTimeout = TimeAmount.seconds(120)
    static let userAgent = "tidesync/0.1"

    /// The connect timeout and the low-speed limit every request is held to.
    let limits: TransferLimits
    let credentials: Mutex<Credentials>
    let passwordSource: PasswordSource?
    /// How many connections the pool keeps to the server at most.
    let connections: Int

    init(endpoint: WebDAVEndpoint, connections: Int, limits: TransferLimits = TransferLimits(),
         passwordSource: PasswordSource? = nil) {
        self.endpoint = endpoint
        self.connections = max(1, connections)
        self.limits = limits
        self.passwordSource = passwordSource
        credentials = Mutex(Credentials(header: endpoint.authorization))
        // The read timeout resets on every byte, so it never catches a trickle (the
        // low-speed watchdog does); it stays as the last resort when that check is off.
        let read = max(Duration.seconds(60), limits.lowSpeedTime)
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: Self.timeAmount(limits.connectTimeout), read: Self.timeAmount(read)),
            // Idle connections are closed before the server closes them: a request written
            // as the server's close is on its way gets no answer (remoteConnectionClosed).
            // Apache's KeepAliveTimeout is 5 s by default.
            connectionPool: .init(idleTimeout: .seconds(4),
                                  concurrentHTTP1ConnectionsPerHostSoftLimit: self.connections),
            decompression: .disabled)
        configuration.httpVersion = .http1Only
        self.configuration = configuration
        clients = Mutex(nil)
        if endpoint.trust.certificateSHA256 == nil || endpoint.baseURL.scheme?.lowercased() != "https" {
            // A `ca_file` that cannot be read fails every request with its reason instead.
            if let tls = try? endpoint.trust.configuration() { configuration.tlsConfiguration = tls }
            clients.withLock { $0 = (HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration), configuration) }
        }
    }

    /// The HTTP client, made now if a pinned certificate waited for the server's chain:
    /// the certificate `certificate_sha256` names must be among those the server presents,
    /// and becomes the only root trusted.
    func client() async throws(ProviderError) -> HTTPClient {
        if let client = clients.withLock({ $0?.client }) { return client }
        if let caFile = endpoint.trust.caFile { _ = try ServerTrust(caFile: caFile).configuration() }
        let (host, port) = endpoint.hostAndPort
        let chain = try await PresentedChain.fetch(host: host, port: port, timeout: limits.connectTimeout)
        guard let pin = endpoint.trust.certificateSHA256, let pinned = chain.first(where: { $0.sha256 == pin }) else {
            throw chain.first.map { $0.refusal(host: host, because: "certificate_sha256 names another certificate") }
                ?? ProviderError(.serverNotTrusted, "\(host) presented no certificate")
        }
        // Only a self-signed certificate can be the one root (the server's own, or the CA
        // atop the chain it sends); one issued by another is trusted through that issuer.
        guard pinned.isSelfIssued else {
            throw pinned.refusal(host: host, because: "certificate_sha256 names it, but it is issued by \(pinned.issuer); set ca_file to that issuer's certificate instead")
        }
        var configuration = configuration
        configuration.tlsConfiguration = try endpoint.trust.configuration(pinned: pinned, isServers: pinned.sha256 == chain.first?.sha256)
        let made = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let (client, spare) = clients.withLock { state -> (HTTPClient, HTTPClient?) in
            if let state { return (state.client, made) }
            state = (made, configuration)
            return (made, nil)
        }
        if let spare { try? await spare.shutdown() }
        return client
    }

    /// A client of its own with the pooled client's settings, for one exchange that needs a
    /// connection nothing else used (whose receive buffer has not grown with earlier
    /// traffic: `heldPut`). The caller shuts it down.
    func separateClient() async throws(ProviderError) -> HTTPClient {
        _ = try await client()
        let configuration = clients.withLock { $0?.configuration } ?? configuration
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    static func timeAmount(_ duration: Duration) -> TimeAmount {
        .nanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    func shutdown() async {
        try? await clients.withLock({ $0?.client })?.shutdown()
    }

    /// A request for `path` (already encoded, absolute) with the common headers; `send`
    /// and `stream` add the `Authorization` header.
    func request(_ method: String, path: String, headers: [(String, String)] = []) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: endpoint.origin + path)
        request.method = HTTPMethod(rawValue: method)
        request.headers.add(name: "User-Agent", value: Self.userAgent)
        request.headers.add(name: "Accept-Encoding", value: "identity")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        return request
    }

    /// `request` with the current `Authorization` header; after a 401 the password source
    /// is asked again first (one caller runs it, the others wait for its answer). The
    /// source may run `password_command` for up to a minute (a keyring waiting to be
    /// unlocked): it runs on a thread of its own, and the requests wait without holding
    /// a lock or a thread of the shared pool — held under the lock, it stalled every task
    /// of the daemon that needed a thread meanwhile.
    func authorized(_ request: HTTPClientRequest) async throws(ProviderError) -> HTTPClientRequest {
        let header = try await currentHeader()
        var request = request
        request.headers.remove(name: "Authorization")
        if let header { request.headers.add(name: "Authorization", value: header) }
        return request
    }

    private func currentHeader() async throws(ProviderError) -> String? {
        let source = passwordSource
        let refresh = credentials.withLock { (state: inout Credentials) -> Task<Result<String?, ProviderError>, Never>? in
            if let running = state.refreshing { return running }
            guard state.refused, let source, endpoint.username != nil else { return nil }
            let task = Task<Result<String?, ProviderError>, Never> { await Self.onOwnThread(source) }
            state.refreshing = task
            return task
        }
        guard let refresh else { return credentials.withLock { $0.header } }
        let result = await refresh.value
        return try credentials.withLock { (state: inout Credentials) throws(ProviderError) -> String? in
            if state.refreshing == refresh {
                state.refreshing = nil
                if case .success(let password) = result, let username = endpoint.username {
                    state.header = WebDAVEndpoint.basicAuthorization(username: username, password: password)
                    state.refused = false
                }
            }
            if case .failure(let error) = result { throw error }
            return state.header
        }
    }

    /// Runs `source` on a new thread and waits for its answer without holding one.
    private static func onOwnThread(_ source: @escaping PasswordSource) async -> Result<String?, ProviderError> {
        await withCheckedContinuation { (done: CheckedContinuation<Result<String?, ProviderError>, Never>) in
            Thread {
                do throws(ProviderError) { done.resume(returning: .success(try source())) } catch { done.resume(returning: .failure(error)) }
            }.start()
        }
    }

    /// Notes the server's answer: a 401 means the password it was sent is no longer good.
    func noteStatus(_ status: HTTPResponseStatus, for request: HTTPClientRequest) {
        guard status.code == 401 else { return }
        let sent = request.headers.first(name: "Authorization")
        credentials.withLock { state in
            if state.header == sent { state.refused = true }
        }
    }

    /// The methods a second sending cannot change anything with.
    static let idempotent: Set<String> = ["GET", "HEAD", "PROPFIND", "OPTIONS"]

    /// Sends `request` and collects a small answer. A request written to a pooled
    /// connection the server had just closed (a keep-alive timeout, or the close after an
    /// answer that left a body unread) never reached it: it is sent once more, on a new
    /// connection. Held to the low-speed limit, like every exchange.
    func send(_ request: HTTPClientRequest) async throws(ProviderError) -> CollectedResponse {
        let request = try await authorized(request)
        let client = try await client()
        var attempt = 0
        while true {
            attempt += 1
            let answered = Mutex(false)
            do {
                let meter = TransferMeter()
                return try await watched(request.method.rawValue, meter: meter) {
                    let response = try await client.execute(request, timeout: Self.metadataTimeout)
                    answered.withLock { $0 = true }
                    self.noteStatus(response.status, for: request)
                    var body = ByteBuffer()
                    for try await chunk in response.body {
                        meter.add(chunk.readableBytes)
                        guard body.readableBytes + chunk.readableBytes <= Self.maximumMetadataBytes else {
                            throw NIOTooManyBytesError(maxBytes: Self.maximumMetadataBytes)
                        }
                        body.writeImmutableBuffer(chunk)
                    }
                    return CollectedResponse(status: response.status, headers: response.headers, body: Data(body.readableBytesView))
                }
            } catch let error as ChannelError where error == .ioOnClosedChannel && attempt == 1 {
                continue
            } catch let error as HTTPClientError where error == .remoteConnectionClosed && attempt == 1
                        && (Self.idempotent.contains(request.method.rawValue) || !answered.withLock({ $0 })) {
                // The server closed a kept-alive connection as the request went out (Apache
                // after KeepAliveTimeout, or a child its idle-server maintenance stops): sent
                // again on a new connection. A write too, when no answer came: every write is
                // guarded (If-Match, Overwrite: F, a MKCOL of an existing folder fails), so one
                // that did land the first time fails the second and the next plan sees it.
                continue
            } catch {
                throw await failure(error, method: request.method.rawValue)
            }
        }
    }

    /// Sends `request` with no deadline (transfers can be long) and hands the answer to
    /// `consume`, which reads its body and adds what it reads (and what the request's body
    /// stream sends) to `meter`: the exchange is cancelled when it stays below the
    /// low-speed limit, and then fails with `serverUnreachable`.
    func stream<T: Sendable>(_ request: HTTPClientRequest, meter: TransferMeter,
                             _ consume: @escaping @Sendable (HTTPClientResponse) async throws -> T) async throws(ProviderError) -> T {
        let request = try await authorized(request)
        let client = try await client()
        var attempt = 0
        while true {
            attempt += 1
            let answered = Mutex(false)
            do {
                return try await watched(request.method.rawValue, meter: meter) {
                    let response = try await client.execute(request, deadline: .distantFuture)
                    answered.withLock { $0 = true }
                    self.noteStatus(response.status, for: request)
                    return try await consume(response)
                }
            } catch {
                guard !answered.withLock({ $0 }), Self.isClose(error) else { throw await failure(error, method: request.method.rawValue) }
                // A GET on a kept-alive connection the server closed as it went out (Apache
                // under load): nothing was read yet, so it is sent once more on a new one.
                if attempt == 1 && Self.idempotent.contains(request.method.rawValue) && request.body == nil { continue }
                throw ProviderError(.serverUnreachable, "the server closed the connection of \(request.method.rawValue) before it answered; will retry",
                                    underlying: Self.closedUnanswered + " (\(error))")
            }
        }
    }

    /// `map(error)`, except that a certificate the TLS handshake refused is named, with
    /// the settings that would make it trusted (read from a second, unverified handshake
    /// that sends nothing).
    func failure(_ error: any Error, method: String) async -> ProviderError {
        guard Self.isUntrustedCertificate(error) else { return Self.map(error, method: method) }
        let (host, port) = endpoint.hostAndPort
        let reason = "\(error)".contains("ostname") ? "it is not for the name \(host)" : "no trusted CA issued it"
        do {
            guard let presented = try await PresentedChain.fetch(host: host, port: port, timeout: limits.connectTimeout).first else {
                return ProviderError(.serverNotTrusted, "\(host) presented no certificate")
            }
            return presented.refusal(host: host, because: reason)
        } catch {
            return ProviderError(.serverNotTrusted, "the certificate of \(host) is not trusted (\(reason)); set ca_file or certificate_sha256 in the domain's config",
                                 underlying: error.description)
        }
    }

    /// True for a TLS handshake that failed on the server's certificate (its chain or name).
    static func isUntrustedCertificate(_ error: any Error) -> Bool {
        if let error = error as? NIOSSLExtraError { return error == .failedToValidateHostname }
        guard let error = error as? NIOSSLError, case .handshakeFailed = error else { return false }
        return "\(error)".contains("CERTIFICATE_VERIFY_FAILED")
    }

    /// The `underlying` of the error `stream` throws when the server closed the connection
    /// before any answer came: the request may not have reached it, and a guarded write
    /// may be sent once more on a new connection (`WebDAVStore.putFile`).
    static let closedUnanswered = "the server closed the connection before it answered"

    /// True for an error that is the connection being closed under the request.
    static func isClose(_ error: any Error) -> Bool {
        if let error = error as? HTTPClientError { return error == .remoteConnectionClosed }
        if let error = error as? ChannelError { return error == .ioOnClosedChannel || error == .eof }
        return false
    }

    /// Runs `operation` beside a watchdog that samples `meter` every second and cancels
    /// the operation once the exchange is too slow (`LowSpeedWatch`), throwing
    /// `serverUnreachable` instead of whatever the cancelled operation threw.
    ///
    /// The watch's clock is the watchdog's own ticks, one second each, not the wall clock:
    /// bytes count when a task reads them, and in a process too busy to run its tasks
    /// promptly each step of an exchange waits its turn (the test suite beside CPU hogs:
    /// a 3-byte GET and the PROPFIND checking its version took over 30 s, and were called
    /// too slow). The watchdog's ticks wait their turn the same way, so only a server
    /// that is slow while this process keeps up is judged.
    func watched<T: Sendable>(_ method: String, meter: TransferMeter,
                              _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        guard limits.watchesSpeed else { return try await operation() }
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await operation() }
            group.addTask { [limits] in
                var watch = LowSpeedWatch(limits: limits)
                var ticks = 0
                while true {
                    try await Task.sleep(for: .seconds(1))
                    ticks += 1
                    if watch.isTooSlow(total: meter.bytes, elapsed: .seconds(ticks)) {
                        throw ProviderError(.serverUnreachable,
                                            "the server answered \(method) too slowly (under \(watch.description)); will retry",
                                            underlying: "low_speed_limit")
                    }
                }
            }
            defer { group.cancelAll() }
            // The watchdog never returns a value: the first value is the operation's.
            return try await group.next()!!
        }
    }

    /// Maps transport failures: cancellation stays cancellation, an oversized answer is
    /// a broken server, everything else means the server cannot be reached.
    static func map(_ error: any Error, method: String) -> ProviderError {
        if let error = error as? ProviderError { return error }
        if error is CancellationError { return ProviderError(.cancelled, "\(method) was cancelled") }
        if let error = error as? NIOTooManyBytesError {
            return ProviderError(.cannotSynchronize, "the server's answer to \(method) was larger than \(maximumMetadataBytes >> 20) MiB", underlying: "\(error)")
        }
        if let error = error as? HTTPClientError, error == .cancelled {
            return ProviderError(.cancelled, "\(method) was cancelled")
        }
        return ProviderError(.serverUnreachable, "cannot reach the server for \(method); will retry", underlying: "\(error)")
    }
}
