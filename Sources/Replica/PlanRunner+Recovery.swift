import Glibc
import Foundation
import SyncEngine

extension PlanRunner {
    /// Cleans up after a crash or an earlier pass: removes the temporary files journal
    /// entries name, completes entries that never failed (they were cut short), and returns
    /// the failed ones by path, to back off from.
    public func recover() throws(ProviderError) -> [RemotePath: PendingOperation] {
        var failures: [RemotePath: PendingOperation] = [:]
        var done: [Int64] = []
        for operation in try provider.pendingOperations() {
            let entry = JournalEntry(operation)
            // A part a download may resume is left to the pass's sweep, which keeps it only
            // for a download the new plan makes of the same version.
            if let temporary = entry?.temporary, !LocalFolder.isResumablePart((temporary as NSString).lastPathComponent) {
                removeTemporary(temporary)
            }
            if operation.attempts == 0, entry?.scratch != nil { continue }  // `recoverRemote` finishes it
            if operation.attempts > 0, let entry {
                if let older = failures[entry.path] { done.append(older.id) }
                failures[entry.path] = operation
            } else {
                if operation.attempts == 0 { logger.info("finishing an interrupted \(operation.kind) of \(entry?.path.description ?? "?") after a restart") }
                done.append(operation.id)
            }
        }
        try provider.complete(done)
        return failures
    }

    /// Completes the earlier failures at paths the plan of a full pass has no step for:
    /// both sides agree there now (a later pass or the other side settled it), so nothing
    /// is in error any more and `status` must not list it until its retry time.
    public func settle(_ failures: [RemotePath: PendingOperation], plan: [SyncAction]) throws(ProviderError) {
        let planned = Set(plan.map(\.path))
        let settled = failures.filter { !planned.contains($0.key) }
        guard !settled.isEmpty else { return }
        for path in settled.keys.map(\.description).sorted() { logger.info("\(path) is in agreement again; its earlier failure is cleared") }
        try provider.complete(settled.map(\.value.id))
    }

    /// Puts the server back in order after a bundle write cut short by a crash or a failure
    /// whose own clean-up could not reach the server: an old version set aside goes back in
    /// place (or, replaced meanwhile, beside it as a conflict copy for `host`), a half-built
    /// new one goes (see `SyncProvider.cleanUpScratch`). Runs before `recover()`; an entry
    /// with a scratch token is completed only here, after its clean-up succeeded, or when its
    /// step succeeds. Throws when the server cannot be reached (the pass is retried later).
    public func recoverRemote(host: String) async throws(ProviderError) {
        for operation in try provider.pendingOperations() {
            guard let entry = JournalEntry(operation), let token = entry.scratch else { continue }
            for copy in try await provider.cleanUpScratch(beside: entry.path, token: token, base: entry.base, host: host) {
                logger.warning("conflict: \(entry.path) was changed by another client while this machine's \(operation.kind) of it was cut short; that version is kept as \(copy)")
            }
            if operation.attempts == 0 {
                if let temporary = entry.temporary { removeTemporary(temporary) }
                logger.info("cleaned up on the server after an interrupted \(operation.kind) of \(entry.path)")
                try provider.complete([operation.id])
            }
        }
    }

    /// Removes one of our temporary files (or a bundle's temporary directory), never
    /// anything else: the name must have our prefix and lie inside the sync folder.
    func removeTemporary(_ path: String) {
        let name = (path as NSString).lastPathComponent
        guard name.hasPrefix(LocalFolder.temporaryPrefix), path.hasPrefix(folder.root + "/"), !path.contains("/../") else { return }
        if unlink(path) != 0, errno == EISDIR {
            try? FileManager.default.removeItem(atPath: path)
        }
    }
}
