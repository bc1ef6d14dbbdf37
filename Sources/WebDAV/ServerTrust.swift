import ContentHash
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import SyncEngine
import Synchronization
import X509

/// The certificates an `https://` server may present beyond those the system trusts: a
/// private CA's (`ca_file`, a PEM bundle added to the system's roots) or exactly one
/// accepted certificate (`certificate_sha256`, as a user accepts one in Nextcloud's
/// client). Verification is never turned off.
public struct ServerTrust: Sendable, Equatable {
    /// A PEM file of CA certificates trusted in addition to the system's.
    public var caFile: String?
    /// The SHA-256 of the one certificate (DER) trusted whatever its issuer, lowercase hex.
    public var certificateSHA256: String?

    public init(caFile: String? = nil, certificateSHA256: String? = nil) {
        self.caFile = caFile
        self.certificateSHA256 = certificateSHA256
    }

    /// The system's roots alone.
    public static let system = ServerTrust()

    /// The TLS settings for a server whose presented chain holds `pinned` (the certificate
    /// `certificateSHA256` names; `isServers` when it is the server's own rather than the
    /// CA atop its chain), or for every server when nothing is pinned.
    func configuration(pinned: PresentedCertificate? = nil, isServers: Bool = false) throws(ProviderError) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile {
            guard (try? NIOSSLCertificate.fromPEMFile(caFile))?.isEmpty == false else {
                throw ProviderError(.serverNotTrusted, "ca_file \(caFile) holds no PEM certificate that can be read; check the file")
            }
            tls.additionalTrustRoots = [.file(caFile)]
        }
        if let pinned {
            // The accepted certificate is the only root. A user accepts a certificate for
            // what it is, not for a name (it is often a self-signed one for an address).
            tls.trustRoots = .certificates([pinned.certificate])
            if isServers { tls.certificateVerification = .noHostnameVerification }
        }
        return tls
    }
}

/// A certificate as a server presented it in a TLS handshake.
struct PresentedCertificate: Sendable {
    let certificate: NIOSSLCertificate
    /// Lowercase hex SHA-256 of its DER bytes.
    let sha256: String
    let subject: String
    let issuer: String

    init(_ certificate: NIOSSLCertificate) throws {
        self.certificate = certificate
        let der = try certificate.toDERBytes()
        var digest = ContentDigest(.sha256)
        digest.update(der)
        sha256 = digest.hex()
        let parsed = try Certificate(derEncoded: der)
        subject = parsed.subject.description
        issuer = parsed.issuer.description
    }

    var isSelfIssued: Bool { subject == issuer }

    /// `AB:CD:…`, as browsers and `openssl x509 -fingerprint -sha256` print it.
    var fingerprint: String {
        var pairs: [String] = []
        var rest = Substring(sha256.uppercased())
        while !rest.isEmpty {
            pairs.append(String(rest.prefix(2)))
            rest = rest.dropFirst(2)
        }
        return pairs.joined(separator: ":")
    }

    /// The refusal of this certificate (the server's own, first in its chain), naming it and
    /// the settings that would make tidesync trust it.
    func refusal(host: String, because reason: String) -> ProviderError {
        ProviderError(.serverNotTrusted, """
            the certificate of \(host) is not trusted (\(reason)): subject \(subject), issuer \(issuer), \
            SHA-256 \(fingerprint). If it is your server's, set ca_file to its CA's certificate (PEM) \
            or certificate_sha256 = "\(sha256)" in the domain's config
            """)
    }
}

/// Reads the certificates a server presents, verified by nothing: only to be named in a
/// refusal or matched against `certificate_sha256`. The handshake is stopped at the
/// certificate check, so no request is ever sent on this connection.
enum PresentedChain {
    static func fetch(host: String, port: Int, timeout: Duration) async throws(ProviderError) -> [PresentedCertificate] {
        let group = MultiThreadedEventLoopGroup.singleton
        let result = OnceResult(group.next().makePromise(of: [NIOSSLCertificate].self))
        let certificates: [NIOSSLCertificate]
        do {
            let context = try NIOSSLContext(configuration: TLSConfiguration.makeClientConfiguration())
            let name = WebDAVEndpoint.isIPAddress(host) ? nil : host
            let channel = try await ClientBootstrap(group: group)
                .connectTimeout(WebDAVConnection.timeAmount(timeout))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let check: NIOSSLCustomVerificationCallback = { chain, verdict in
                            result.succeed(chain)
                            verdict.succeed(NIOSSLVerificationResult.failed)
                        }
                        let handler = try NIOSSLClientHandler(context: context, serverHostname: name, customVerificationCallback: check)
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                }
                .connect(host: host, port: port).get()
            channel.closeFuture.whenComplete { _ in result.fail(ProviderError(.serverUnreachable, "\(host) closed the TLS handshake")) }
            group.next().scheduleTask(in: WebDAVConnection.timeAmount(timeout)) {
                result.fail(ProviderError(.serverUnreachable, "\(host) did not present a certificate in time"))
            }
            defer { channel.close(promise: nil) }
            certificates = try await result.future.get()
        } catch let error as ProviderError {
            result.fail(error)
            throw error
        } catch {
            result.fail(error)  // a promise is completed on every path
            throw ProviderError(.serverUnreachable, "cannot reach \(host):\(port) to read its certificate; will retry", underlying: "\(error)")
        }
        do { return try certificates.map(PresentedCertificate.init) } catch {
            throw ProviderError(.serverNotTrusted, "the certificate of \(host) cannot be read", underlying: "\(error)")
        }
    }

    /// A promise completed by its first outcome only (the handshake's certificate check, the
    /// channel's close and the timeout all race to complete it).
    final class OnceResult: Sendable {
        private let promise: EventLoopPromise<[NIOSSLCertificate]>
        private let done = Mutex(false)

        init(_ promise: EventLoopPromise<[NIOSSLCertificate]>) { self.promise = promise }

        var future: EventLoopFuture<[NIOSSLCertificate]> { promise.futureResult }

        func succeed(_ value: [NIOSSLCertificate]) {
            if first() { promise.succeed(value) }
        }

        func fail(_ error: any Error) {
            if first() { promise.fail(error) }
        }

        private func first() -> Bool {
            done.withLock { done in
                defer { done = true }
                return !done
            }
        }
    }
}
