import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SyncEngine

/// Where and how to reach a WebDAV server. The password is only ever put in the
/// `Authorization` header; `description` redacts it.
public struct WebDAVEndpoint: Sendable, CustomStringConvertible {
    /// The collection that is the store's root, e.g. `https://cloud.example.com/remote.php/dav/files/alice/`.
    public let baseURL: URL
    public let username: String?
    let password: String?
    /// Maps paths below `baseURL` to request paths and back.
    let paths: WebDAVPath

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
        return "Basic " + Data("\(username):\(password ?? "")".utf8).base64EncodedString()
    }

    /// `scheme://host:port`, the origin requests go to.
    var origin: String {
        let host = baseURL.host!
        var text = "\(baseURL.scheme!.lowercased())://" + (host.contains(":") ? "[\(host)]" : host)
        if let port = baseURL.port { text += ":\(port)" }
        return text
    }
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
    let client: HTTPClient
    /// The largest metadata answer accepted (a hostile server cannot exhaust memory).
    static let maximumMetadataBytes = 256 << 20
    static let metadataTimeout = TimeAmount.seconds(120)
    static let userAgent = "tidesync/0.1"

    init(endpoint: WebDAVEndpoint, connections: Int) {
        self.endpoint = endpoint
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(15), read: .seconds(60)),
            connectionPool: .init(idleTimeout: .seconds(60),
                                  concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, connections)),
            decompression: .disabled)
        configuration.httpVersion = .http1Only
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    func shutdown() async {
        try? await client.shutdown()
    }

    /// A request for `path` (already encoded, absolute) with auth and the common headers.
    func request(_ method: String, path: String, headers: [(String, String)] = []) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: endpoint.origin + path)
        request.method = HTTPMethod(rawValue: method)
        request.headers.add(name: "User-Agent", value: Self.userAgent)
        request.headers.add(name: "Accept-Encoding", value: "identity")
        if let authorization = endpoint.authorization { request.headers.add(name: "Authorization", value: authorization) }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        return request
    }

    /// Sends `request` and collects a small answer. A request written to a pooled
    /// connection the server had just closed (a keep-alive timeout, or the close after an
    /// answer that left a body unread) never reached it: it is sent once more, on a new
    /// connection.
    func send(_ request: HTTPClientRequest) async throws(ProviderError) -> CollectedResponse {
        var attempt = 0
        while true {
            attempt += 1
            do {
                let response = try await client.execute(request, timeout: Self.metadataTimeout)
                let body = try await response.body.collect(upTo: Self.maximumMetadataBytes)
                return CollectedResponse(status: response.status, headers: response.headers, body: Data(body.readableBytesView))
            } catch let error as ChannelError where error == .ioOnClosedChannel && attempt == 1 {
                continue
            } catch {
                throw Self.map(error, method: request.method.rawValue)
            }
        }
    }

    /// Sends `request` with no deadline but the read timeout (transfers can be long).
    func stream(_ request: HTTPClientRequest) async throws(ProviderError) -> HTTPClientResponse {
        do {
            return try await client.execute(request, deadline: .distantFuture)
        } catch {
            throw Self.map(error, method: request.method.rawValue)
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
