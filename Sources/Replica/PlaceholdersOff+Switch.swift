// A domain switched from files on demand to `mode = "off"` (or whose kernel no longer offers
// pre-content events) downloads every placeholder it recorded: nothing fills them any more,
// and their holes would read as zeros. Durability contract: each file is downloaded into a
// temporary, fsynced, put in place with install's guards (a file the user changed is never
// replaced) and recorded whole in one transaction.
import Foundation
import Glibc
import Logging
import SyncEngine

extension PlaceholdersOff {
    /// Downloads the recorded placeholders whole, each over its placeholder when that is
    /// still the file recorded; returns how many are whole now. A failure is logged and
    /// left for the next start (a changed remote version is brought down by the next pass).
    public func downloadWhole(_ placeholders: [RecordedPlaceholder], provider: SyncProvider, logger: Logger) async -> Int {
        var done = 0
        for placeholder in placeholders {
            let temporary = folder.temporaryURL(beside: placeholder.path)
            do throws(ProviderError) {
                try await downloadWhole(placeholder, into: temporary, provider: provider)
                done += 1
            } catch {
                unlink(temporary.path)
                logger.warning("\(folder.absolute(placeholder.path)) stays a placeholder for now (files on demand is off): \(error.message)")
            }
        }
        return done
    }

    private func downloadWhole(_ placeholder: RecordedPlaceholder, into temporary: URL,
                               provider: SyncProvider) async throws(ProviderError) {
        let record = placeholder.record
        guard var entry = RemoteEntry(recorded: record, at: placeholder.path) else {
            throw ProviderError(.noSuchItem, "no remote version of \(placeholder.path) is recorded")
        }
        entry.etag = try await provider.download(placeholder.path, version: record.remoteETag, into: temporary) ?? entry.etag
        let modified = record.local.map { Date(timeIntervalSince1970: Double($0.modificationTimeNanoseconds) / 1e9) }
        let stat = try folder.install(temporary, at: placeholder.path, replacing: record.local, modificationDate: modified)
        entry.size = stat.size
        try provider.record(at: placeholder.path, item: record.id, kind: .file, remote: entry, local: stat,
                            materialization: .materialized, operation: nil)
    }
}
