import Foundation
import Replica
import SyncEngine
import Testing
import TestSupport

/// The inotify watcher's lifetime: a stopped watcher is freed, and with it its inotify
/// instance (`fs.inotify.max_user_instances` is 128 per user by default), its stop pipe
/// and its reader thread. A daemon restarts its watcher each time the sync folder comes
/// back, and a test run starts hundreds of them.
@Suite struct InotifyWatcherTests {
    @Test("a stopped watcher is freed, closing its inotify instance")
    func aStoppedWatcherIsFreed() async throws {
        let root = NSTemporaryDirectory() + "tidesync-watcher-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: root + "/sub", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        weak var gone: InotifyWatcher?
        do {
            let watcher = try InotifyWatcher(root: root, exclude: ExcludeList(patterns: []))
            gone = watcher
            let seen = Seen()
            watcher.start { _ in seen.mark() }
            // The reader thread runs: an event made now is delivered.
            try writeFile(root + "/sub/file", "x")
            try await eventually("the watcher reports a new file") { seen.marked }
            watcher.stop()
        }
        // Its reader thread ends soon after stop(); then nothing holds the watcher.
        try await eventually("the stopped watcher is freed", timeout: .seconds(10)) { gone == nil }
    }
}

/// Whether the watcher delivered anything yet, from its reader thread.
private final class Seen: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func mark() { lock.withLock { value = true } }
    var marked: Bool { lock.withLock { value } }
}
