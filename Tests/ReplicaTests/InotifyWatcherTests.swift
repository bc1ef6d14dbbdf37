import Foundation
import Glibc
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

    @Test("a folder whose watch failed because its parent was just moved is watched once the move is read")
    func aFolderMadeJustBeforeItsParentMovedIsWatched() async throws {
        let root = NSTemporaryDirectory() + "tidesync-watcher-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: root + "/a", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        // The watch of a/new fails as it does when its event is read after a was renamed.
        let failed = Seen()
        let watcher = try InotifyWatcher(root: root, exclude: ExcludeList(patterns: [])) { fd, path, mask in
            if path.hasSuffix("/a/new"), !failed.marked {
                failed.mark()
                errno = ENOENT
                return -1
            }
            return inotify_add_watch(fd, path, mask)
        }
        let events = Events()
        watcher.start { events.add($0) }
        defer { watcher.stop() }
        try FileManager.default.createDirectory(atPath: root + "/a/new", withIntermediateDirectories: false)
        try await eventually("the new folder reported") { events.contains("folderAppeared(a/new)") }
        #expect(failed.marked)
        #expect(rename(root + "/a", root + "/b") == 0)
        try await eventually("the move reported") { events.contains("moved(from: a, to: b") }
        try writeFile(root + "/b/new/f", "x")
        try await eventually("a file made below the folder whose watch had failed reported: \(events.all)") { events.contains("b/new/f") }
    }
}

/// The watcher's events as text, from its reader thread.
private final class Events: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [String] = []
    func add(_ batch: [WatchEvent]) { lock.withLock { seen += batch.map { "\($0)" } } }
    var all: [String] { lock.withLock { seen } }
    func contains(_ text: String) -> Bool { all.contains { $0.contains(text) } }
}

/// Whether the watcher delivered anything yet, from its reader thread.
private final class Seen: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func mark() { lock.withLock { value = true } }
    var marked: Bool { lock.withLock { value } }
}
