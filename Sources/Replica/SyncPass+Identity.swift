import Foundation
import SyncEngine

/// The remote a domain is configured with, as the pass checks it against the state DB.
public struct RemoteBinding: Sendable, Equatable {
    /// The domain's name, for messages.
    public var domain: String
    /// The normalised location (see `RemoteIdentity.location`).
    public var location: String

    public init(domain: String, location: String) {
        self.domain = domain
        self.location = location
    }
}

extension SyncPass {
    /// Makes sure the engine's records describe the remote this pass reads
    /// (`SyncProvider.bindRemote`); the temporary files of the journal entries a switch
    /// drops are removed first. Runs before anything is replayed or planned.
    /// - Returns: the change, when there was one.
    func checkRemoteIdentity() async throws(ProviderError) -> RemoteChange? {
        guard let binding = remote else { return nil }
        let runner = self.runner
        let change = try await runner.provider.bindRemote(location: binding.location) { operation in
            if let temporary = PlanRunner.JournalEntry(operation)?.temporary { runner.removeTemporary(temporary) }
        }
        if let change { logger.warning("\(change.message(domain: binding.domain))") }
        return change
    }
}
