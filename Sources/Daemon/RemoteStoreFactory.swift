import ContentHash
import Foundation
import LocalStore
import Logging
import SyncEngine
import TidesyncConfig
import WebDAV

/// A domain's remote store together with how to release it.
public struct OpenedStore: Sendable {
    public let store: any RemoteStore
    /// Closes connections; the store must not be used afterwards.
    public let close: @Sendable () async -> Void
}

/// Builds the `RemoteStore` a domain's `remote` names.
public enum RemoteStoreFactory {
    /// Opens the store of `domain`, resolving its password now (it is kept only in the
    /// store's `Authorization` header). Errors are user-facing and hold no password.
    /// `putVerdicts` is the file where a WebDAV store keeps what its probe proved about the
    /// server's PUT between starts (nil: proven at every start).
    public static func open(_ domain: DomainConfiguration, putVerdicts: String? = nil, logger: Logger) throws(ProviderError) -> OpenedStore {
        switch domain.remote {
        case .localDirectory(let path):
            return OpenedStore(store: LocalDirectoryStore(root: path), close: {})
        case .webDAV(let url):
            let password: Password?
            do { password = try domain.resolvePassword() } catch {
                throw ProviderError(.notAuthenticated, "domain \"\(domain.name)\": \(error)")
            }
            if domain.username != nil, password == nil {
                throw ProviderError(.notAuthenticated,
                                    "domain \"\(domain.name)\" has a username but no password: set password_command, password_file or \(DomainConfiguration.passwordVariable(forDomain: domain.name))")
            }
            var endpoint = try WebDAVEndpoint(baseURL: url, username: domain.username, password: password?.cleartext,
                                              allowInsecureHTTP: domain.allowInsecureHTTP)
            endpoint.trust = ServerTrust(caFile: domain.caFile, certificateSHA256: domain.certificateSHA256)
            let limits = TransferLimits(connectTimeout: domain.connectTimeout, lowSpeedLimit: domain.lowSpeedLimit.bytes,
                                        lowSpeedTime: domain.lowSpeedTime)
            // After a 401 the password is read again (password_command run anew), so one
            // changed in the keyring is used at the next attempt.
            let source: PasswordSource = { () throws(ProviderError) -> String? in
                do { return try domain.resolvePassword()?.cleartext } catch {
                    throw ProviderError(.notAuthenticated, "domain \"\(domain.name)\": \(error)")
                }
            }
            let store = WebDAVStore(endpoint: endpoint, connections: domain.transfers * 2, limits: limits,
                                    passwordSource: source, probeOwner: probeOwner(domain),
                                    putVerdicts: putVerdicts.map(PutVerdictMemory.init(path:)), logger: logger)
            return OpenedStore(store: store, close: { await store.shutdown() })
        }
    }

    /// A name for this machine's domain, the same at every start and different for each
    /// machine and domain (and folder): 16 hex digits of the SHA-256 of the machine id (the
    /// host name without one), the domain's name and its folder. Names the write-guard
    /// probe's scratch files, so a probe killed half-way is cleaned up by the next.
    static func probeOwner(_ domain: DomainConfiguration) -> String {
        var machine = (try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        if machine.isEmpty { machine = ProcessInfo.processInfo.hostName }
        var digest = ContentDigest(.sha256)
        digest.update(Array("\(machine)\n\(domain.name)\n\(domain.localPath)".utf8))
        return String(digest.hex().prefix(16))
    }
}
