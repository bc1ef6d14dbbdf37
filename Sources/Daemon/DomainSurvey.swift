import Foundation
import Logging
import StateDatabase
import SyncEngine
import TidesyncConfig

/// What `tidesync run` can establish about a domain before the sync engine exists:
/// the state DB opens (and is migrated), the remote answers, and both trees can be
/// listed. It transfers nothing.
public struct DomainSurvey: Sendable, CustomStringConvertible {
    public var name: String
    public var localPath: String
    public var remote: String
    public var stateDatabasePath: String
    public var localItems: Int
    public var remoteItems: Int
    public var remoteBytes: Int64

    public var description: String {
        "domain \"\(name)\": \(localPath) ⇄ \(remote): \(localItems) local item(s), \(remoteItems) remote item(s) (\(remoteBytes) bytes); state DB \(stateDatabasePath)"
    }

    /// Surveys `domain`; throws a `ProviderError` whose message says what to fix.
    public static func run(_ domain: DomainConfiguration, configuration: TidesyncConfiguration,
                           logger: Logger) async throws(ProviderError) -> DomainSurvey {
        let databasePath = configuration.stateDatabasePath(for: domain)
        _ = try StateDatabase(path: databasePath)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: domain.localPath, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ProviderError(.cannotSynchronize, "domain \"\(domain.name)\": the local folder \(domain.localPath) does not exist; create it (mkdir -p \(domain.localPath))")
        }
        let opened = try RemoteStoreFactory.open(domain, logger: logger)
        do {
            let entries = try await opened.store.descendants(of: .root)
            await opened.close()
            let local = FileManager.default.enumerator(atPath: domain.localPath)?.allObjects.count ?? 0
            return DomainSurvey(name: domain.name, localPath: domain.localPath, remote: domain.remote.description,
                                stateDatabasePath: databasePath, localItems: local, remoteItems: entries.count,
                                remoteBytes: entries.reduce(0) { $0 + $1.size })
        } catch {
            await opened.close()
            throw error
        }
    }
}
