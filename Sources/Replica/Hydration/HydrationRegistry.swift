// The placeholders a hydrator knows and the fetches it has in flight, behind one lock: the
// event loop's thread asks it synchronously (an event for a file it does not hold is
// allowed at once, without a write) and the fill tasks update it. Lock ordering: this lock
// is a leaf; nothing is called while it is held.
import Foundation
import SyncEngine

/// A file's identity on this machine: what `fstat` of an event's descriptor gives.
public struct FileIdentity: Hashable, Sendable {
    /// `st_dev`.
    public var device: UInt64
    /// `st_ino`.
    public var inode: UInt64

    /// The identity of a file with these numbers.
    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}

/// A dataless or partial file the hydrator fills when it is read.
public struct KnownPlaceholder: Sendable {
    /// The item it is, as the state DB knows it.
    public var item: ItemIdentifier
    /// Where it is (absolute), for messages only: hydration goes through the event's descriptor.
    public var path: String
    /// The version its bytes belong to (nil: the server named none).
    public var version: ETag?
    /// Its size in bytes when it was made: events are clamped to it (bytes a program appended
    /// are its own).
    public var size: Int64
    /// The bytes already on disk.
    public var present: RangeSet
    /// Writes the bytes of the given range of `version` into the given open file at their
    /// own offsets, unflushed (and maybe some of them when it fails).
    public var fetch: @Sendable (ByteRange, Int32) async throws(ProviderError) -> Void

    /// A placeholder holding `present` (nothing, by default).
    public init(item: ItemIdentifier, path: String, version: ETag?, size: Int64,
                present: RangeSet = RangeSet(), fetch: @escaping @Sendable (ByteRange, Int32) async throws(ProviderError) -> Void) {
        self.item = item
        self.path = path
        self.version = version
        self.size = size
        self.present = present
        self.fetch = fetch
    }

    /// What the file holds.
    public var state: Materialization {
        if present.contains(ByteRange(offset: 0, length: size)) { return .materialized }
        return present.byteCount == 0 ? .dataless : .partial
    }
}

/// One fetch of one range of one file, awaited by every reader that needs it.
struct InFlightFetch: Sendable {
    var range: ByteRange
    var task: Task<Void, any Error>
}

/// The known placeholders and in-flight fetches, thread-safe.
final class HydrationRegistry: @unchecked Sendable {
    private let lock = NSLock()
    private var placeholders: [FileIdentity: KnownPlaceholder] = [:]
    private var inFlight: [FileIdentity: [InFlightFetch]] = [:]
    /// Per file, the fills writing into it now and the mtime it had before the first of
    /// them began: what each of them restores (see `beginWriting`).
    private var writing: [FileIdentity: (fills: Int, modificationTime: Int64)] = [:]
    /// Per file, the tasks making readable ranges durable.
    private var persisting: [FileIdentity: [UUID: Task<Void, Never>]] = [:]

    /// Registers `placeholder`; fetches left from an earlier file with the same identity (an
    /// inode number used again) are not joined by its readers.
    func insert(_ placeholder: KnownPlaceholder, for file: FileIdentity) {
        lock.withLock {
            placeholders[file] = placeholder
            inFlight[file] = nil
        }
    }

    @discardableResult
    func remove(_ file: FileIdentity) -> KnownPlaceholder? {
        lock.withLock { placeholders.removeValue(forKey: file) }
    }

    func placeholder(_ file: FileIdentity) -> KnownPlaceholder? {
        lock.withLock { placeholders[file] }
    }

    var identities: Set<FileIdentity> {
        lock.withLock { Set(placeholders.keys) }
    }

    /// A fill begins writing into `file`, whose mtime is `current` now; returns the mtime it
    /// restores when done. Fills stream into the file while others do, and each write moves
    /// the mtime: a fill that began while another was writing would take that one's moved
    /// mtime for the file's own and leave it behind, a change the scan would see. So every
    /// fill of one burst restores the mtime from before the burst.
    func beginWriting(_ file: FileIdentity, current: Int64) -> Int64 {
        lock.withLock {
            let burst = writing[file].map { ($0.fills + 1, $0.modificationTime) } ?? (1, current)
            writing[file] = burst
            return burst.1
        }
    }

    /// A fill stopped writing into `file`; returns true when another one still writes.
    @discardableResult
    func endWriting(_ file: FileIdentity) -> Bool {
        lock.withLock {
            guard let burst = writing[file], burst.fills > 1 else {
                writing[file] = nil
                return false
            }
            writing[file] = (burst.fills - 1, burst.modificationTime)
            return true
        }
    }

    /// Runs `start`'s task, which makes ranges of `file` already readable durable (fsync,
    /// then record), as one of the file's persists until it calls `endPersist` with `id`.
    func persist(_ file: FileIdentity, id: UUID, _ start: () -> Task<Void, Never>) {
        lock.withLock { persisting[file, default: [:]][id] = start() }
    }

    func endPersist(_ file: FileIdentity, id: UUID) {
        lock.withLock {
            persisting[file]?[id] = nil
            if persisting[file]?.isEmpty == true { persisting[file] = nil }
        }
    }

    /// The persists of `file` running now.
    func persists(of file: FileIdentity) -> [Task<Void, Never>] {
        lock.withLock { Array((persisting[file] ?? [:]).values) }
    }

    /// Every persist running now.
    var allPersists: [Task<Void, Never>] {
        lock.withLock { persisting.values.flatMap(\.values) }
    }

    /// Takes back `range` of `file`, readable until a failed fsync: it is fetched again.
    func unfinish(_ range: ByteRange, of file: FileIdentity) {
        lock.withLock { placeholders[file]?.present.remove(range) }
    }

    /// True when the byte at `offset` of `file` is on disk or being fetched.
    func holdsOrFetches(_ offset: Int64, of file: FileIdentity) -> Bool {
        let byte = ByteRange(offset: offset, length: 1)
        return lock.withLock {
            guard let placeholder = placeholders[file] else { return false }
            return placeholder.present.missing(in: byte).isEmpty
                || (inFlight[file] ?? []).contains { $0.range.offset <= offset && offset < $0.range.end }
        }
    }

    /// True while a fetch of `file` is in flight.
    func isFetching(_ file: FileIdentity) -> Bool {
        lock.withLock { !(inFlight[file]?.isEmpty ?? true) }
    }

    /// The fetches `wanted` of `file` needs: those in flight that overlap what it lacks,
    /// and new ones for the rest, made by `start` and recorded as in flight, all at once so
    /// two readers of one range share one fetch. Empty when every byte is present.
    func fetches(for wanted: ByteRange, of file: FileIdentity,
                 start: (ByteRange) -> Task<Void, any Error>) -> [Task<Void, any Error>] {
        lock.withLock {
            guard let placeholder = placeholders[file] else { return [] }
            let running = inFlight[file] ?? []
            let runningSet = RangeSet(running.map(\.range))
            var tasks: [Task<Void, any Error>] = []
            for lacking in placeholder.present.missing(in: wanted) {
                tasks += running.filter { $0.range.offset < lacking.end && lacking.offset < $0.range.end }.map(\.task)
                for fresh in runningSet.missing(in: lacking) {
                    let task = start(fresh)
                    inFlight[file, default: []].append(InFlightFetch(range: fresh, task: task))
                    tasks.append(task)
                }
            }
            return tasks
        }
    }

    /// Records that `range` of `file` is on disk (or, with `present` false, that its fetch
    /// ended without it); returns the placeholder as it is now.
    @discardableResult
    func finish(_ range: ByteRange, of file: FileIdentity, present: Bool) -> KnownPlaceholder? {
        lock.withLock {
            inFlight[file]?.removeAll { $0.range == range }
            if inFlight[file]?.isEmpty == true { inFlight[file] = nil }
            if present { placeholders[file]?.present.insert(range) }
            return placeholders[file]
        }
    }
}
