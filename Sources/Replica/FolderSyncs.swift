// Folder fsyncs asked for at the same time share one (issue 16 item 4: a 10 000-file download
// fsynced its folder once per file). A caller needs an fsync of the folder that *starts*
// after its own change (a rename into it) was made: one already running may have begun
// before, so the caller waits for it to end and then for the next round, which takes every
// caller that came meanwhile. Rounds of one folder never overlap; different folders' do.

import Foundation

/// Coalesces fsyncs of the same folder.
final class FolderSyncs: @unchecked Sendable {
    private struct Rounds {
        var started = 0
        var finished = 0
        var running = false
        var waiting = 0
    }

    private let condition = NSCondition()
    private var folders: [String: Rounds] = [:]

    private var rounds = 0

    /// How many fsyncs ran (for tests).
    var performed: Int { condition.withLock { rounds } }

    /// How many callers wait on `folder` or run its fsync (for tests).
    func callers(of folder: String) -> Int { condition.withLock { folders[folder]?.waiting ?? 0 } }

    /// Returns once `sync` ran for `folder` in a round that began after this call did.
    func sync(_ folder: String, _ sync: () -> Void) {
        condition.lock()
        defer { condition.unlock() }
        if folders[folder] == nil { folders[folder] = Rounds() }
        let needed = folders[folder]!.started + 1
        folders[folder]!.waiting += 1
        while folders[folder]!.finished < needed {
            if folders[folder]!.running {
                condition.wait()
                continue
            }
            folders[folder]!.started += 1
            folders[folder]!.running = true
            condition.unlock()
            sync()
            condition.lock()
            rounds += 1
            folders[folder]!.finished = folders[folder]!.started
            folders[folder]!.running = false
            condition.broadcast()
        }
        folders[folder]!.waiting -= 1
        if folders[folder]!.waiting == 0, !folders[folder]!.running { folders[folder] = nil }
    }
}
