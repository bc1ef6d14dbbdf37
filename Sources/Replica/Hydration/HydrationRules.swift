// Who may hydrate (issue 15 items 4 and 5), by the name the kernel keeps of a process
// (`/proc/PID/comm`, at most 15 bytes): programs that skip a file's holes without reading
// them (cp, tar --sparse) get a placeholder hydrated whole when they open it, so their copy
// never holds silent zeros; indexers that would pull a whole cloud folder down get EPERM
// for the bytes a placeholder lacks. The event loop asks these on its own thread: reading
// `/proc` never touches a placeholder.
import Foundation
import Glibc

/// Which programs a hydrator treats apart, by process name.
public struct HydrationRules: Sendable, Equatable {
    /// A placeholder one of these opens is hydrated whole before the open returns.
    public var hydrateOnOpen: Set<String>
    /// These never fetch: a read of bytes a placeholder lacks fails with EPERM (the kernel
    /// takes no EACCES in a fanotify answer). A name in both lists is denied.
    public var denyHydration: Set<String>

    /// Rules with these names (none by default: every reader hydrates what it reads).
    public init(hydrateOnOpen: [String] = [], denyHydration: [String] = []) {
        self.hydrateOnOpen = Set(hydrateOnOpen)
        self.denyHydration = Set(denyHydration)
    }

    /// The name of process `pid` as the kernel keeps it, or nil when it is gone.
    public static func processName(of pid: Int32) -> String? {
        let fd = open("/proc/\(pid)/comm", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].prefix { $0 != 10 }, as: UTF8.self)
    }
}

/// One read of a placeholder that fetched bytes, for `status`: who pulled what.
public struct HydrationEntry: Sendable, Equatable {
    /// The reading process's name (nil: it was gone before it was looked up).
    public var program: String?
    public var pid: Int32
    /// The placeholder, absolute.
    public var path: String
    /// The bytes fetched for this read (aligned ranges that were missing).
    public var bytes: Int64
    /// When it was asked for.
    public var date: Date
    /// A write (or an open for writing): the whole file is fetched before it goes on.
    public var writing: Bool

    public init(program: String?, pid: Int32, path: String, bytes: Int64, date: Date = Date(), writing: Bool = false) {
        self.program = program
        self.pid = pid
        self.path = path
        self.bytes = bytes
        self.date = date
        self.writing = writing
    }
}

/// The last hydrations, newest last, at most `capacity`, and the ones in flight (a reader
/// waiting for its bytes). Lock ordering: a leaf lock.
final class HydrationHistory: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [HydrationEntry] = []
    private var waiting: [Int: HydrationEntry] = [:]
    private var nextWaiting = 0
    let capacity: Int

    init(capacity: Int = 8) { self.capacity = capacity }

    func append(_ entry: HydrationEntry) {
        lock.withLock {
            entries.append(entry)
            if entries.count > capacity { entries.removeFirst(entries.count - capacity) }
        }
    }

    var all: [HydrationEntry] { lock.withLock { entries } }

    /// Records that `entry`'s reader waits for its bytes; returns the key `ended` takes.
    func started(_ entry: HydrationEntry) -> Int {
        lock.withLock {
            nextWaiting += 1
            waiting[nextWaiting] = entry
            return nextWaiting
        }
    }

    /// The reader of `key` got its answer.
    func ended(_ key: Int) {
        lock.withLock { _ = waiting.removeValue(forKey: key) }
    }

    /// The readers waiting now, longest-waiting first.
    var inFlight: [HydrationEntry] {
        lock.withLock { waiting.sorted { $0.key < $1.key }.map(\.value) }
    }
}
