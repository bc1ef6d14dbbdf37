// Download parts that survive a cut: a download of a file whose version is known and strong
// writes to a part named by the file and the version (`LocalFolder.partURL`). A failure of
// the network or a stop keeps it, a crash leaves it, and the next attempt of the same
// version resumes it (`SyncProvider.download(_:version:into:resuming:progress:)`). A part is
// kept only while a plan still downloads that version: the sweep of a full pass removes
// every other, so parts never pile up.
import Foundation
import SyncEngine

extension PlanRunner {
    /// The temporary file `step` writes: for a download of a file of known, strong version
    /// the part named by its name and version (`LocalFolder.partURL`), which a later attempt
    /// resumes; otherwise a fresh one. Nil for steps that write none.
    func temporaryURL(for step: SyncAction, remote: [RemotePath: RemoteEntry]) -> URL? {
        guard step.needsTemporary else { return nil }
        if case .download(let path, let version?, _, _) = step, !version.isWeak, remote[path]?.kind == .file {
            return folder.partURL(beside: path, version: version)
        }
        return folder.temporaryURL(beside: step.path)
    }

    /// True for failures that leave a download's part worth resuming: the connection was
    /// lost, timed out or the daemon stopped. Anything else (a full disk, a changed
    /// version, a server that answered with other bytes) starts over.
    static func keepsPart(_ error: ProviderError) -> Bool {
        error.code == .serverUnreachable || error.code == .serverFailedItem || error.code == .cancelled
    }

    /// Removes the resumable parts among `parts` (absolute paths the scan found) that no
    /// step of `plan` resumes: the version changed, the file went, or it was synced.
    func sweepParts(_ parts: [String], plan: [SyncAction], remote: [RemotePath: RemoteEntry]) {
        guard !parts.isEmpty else { return }  // most passes: no part to look for in a large plan
        let wanted = Set(plan.compactMap { temporaryURL(for: $0, remote: remote)?.path })
        for part in parts where !wanted.contains(part) {
            logger.info("removing the download part \(part): no download resumes it")
            removeTemporary(part)
        }
    }
}
