// On-access hydration (issue 15 item 3): a fanotify pre-content group with inode marks on
// placeholders only, and an event loop on its own thread that never touches a placeholder
// by path (a handler that reads its own marked file waits on itself forever, facts §1.8).
// Every event is answered: allowed at once for the daemon's own pid and for any file that
// is not a registered placeholder (never written to: a handler that writes to files it did
// not check corrupts unrelated ones, facts §0.7); for a placeholder, allowed only once the
// bytes read are on disk, and denied with an errno the kernel takes otherwise, within the
// timeout (the kernel has none: an unanswered reader waits forever, facts §1.6).
import Foundation
import Glibc
import Logging
import SyncEngine
import SystemCalls

/// What a hydration wrote: the caller records it (the hydrated range with the new stat, in
/// one transaction) so the daemon's own write is never taken for a user's edit.
public struct HydrationRecord: Sendable, Equatable {
    /// The item written into.
    public var item: ItemIdentifier
    /// The range now on disk, fsynced.
    public var range: ByteRange
    /// The file's stat after the write, its mtime restored.
    public var stat: LocalStat
    /// What the file holds now; `materialized` once every byte is there (its mark removed).
    public var state: Materialization
    /// The file's stat before the write: when it differs from the recorded one, a program
    /// changed the file and its stat must stay recorded as it was.
    public var before: LocalStat
    /// Every range of the file on disk now, this one included.
    public var present: RangeSet
    /// The version the bytes belong to.
    public var version: ETag?

    public init(item: ItemIdentifier, range: ByteRange, stat: LocalStat, state: Materialization, before: LocalStat,
                present: RangeSet, version: ETag?) {
        self.item = item
        self.range = range
        self.stat = stat
        self.state = state
        self.before = before
        self.present = present
        self.version = version
    }
}

/// Fills registered placeholders when programs read them, by the aligned ranges they read.
public final class Hydrator: @unchecked Sendable {
    /// The group the placeholders are marked in.
    public let group: PreContentGroup
    /// Fetches are widened to multiples of this (a power of two, at least 4 KiB).
    public let alignment: Int64
    /// How long a reader may wait for its bytes before it gets EIO.
    public let timeout: Duration
    /// Who hydrates a placeholder whole on open, and who may not hydrate at all.
    public let rules: HydrationRules
    let registry = HydrationRegistry()
    /// Where fills are made durable, one at a time (see `persist`): off Swift's cooperative
    /// threads, which an fsync would hold.
    let persistQueue = DispatchQueue(label: "tidesync.hydrator.persist")
    let history = HydrationHistory()
    let recorded: @Sendable (HydrationRecord) -> Void
    let logger: Logger
    private let lock = NSLock()
    private var stopped = false
    private var seen = 0
    private var thread: Thread?
    /// The descriptors of the events read and not answered yet: each is answered once,
    /// by whoever takes it out of here (a fill, or `stop`).
    private var pending: Set<Int32> = []
    /// Signalled when the event loop has ended.
    private let loopEnded = DispatchSemaphore(value: 0)
    /// Signalled by `stop` to wake the loop, which otherwise waits for events without a
    /// timeout; nil when no pipe could be made (then the loop looks every 50 ms).
    private let wake = WakePipe()
    /// True when the group came from an earlier run of the daemon.
    public let isInherited: Bool
    /// Other processes' events read before `release`, in order; nil once released (or
    /// never held: a new group has no mark before the placeholders are registered).
    private var held: [PreContentGroup.Event]?

    /// A hydrator with a new pre-content group (needs root and Linux 6.14+), or with
    /// `inherited`, the group of an earlier run (see `start`). `recorded` is called after
    /// each range is on disk and before its reader goes on.
    public init(alignment: Int64 = 1 << 20, timeout: Duration = .seconds(30), rules: HydrationRules = HydrationRules(),
                inherited: PreContentGroup? = nil, logger: Logger = Logger(label: "tidesync.hydrator"),
                recorded: @escaping @Sendable (HydrationRecord) -> Void) throws(PreContentGroup.Failure) {
        precondition(alignment >= 4096 && alignment & (alignment - 1) == 0, "alignment must be a power of two of at least 4 KiB")
        if let inherited { group = inherited } else { group = try PreContentGroup() }
        isInherited = inherited != nil
        held = inherited != nil ? [] : nil
        self.alignment = alignment
        self.timeout = timeout
        self.rules = rules
        self.logger = logger
        self.recorded = recorded
    }

    /// Registers the placeholder open as `file` and marks it; call it before the file is
    /// visible (`LocalFolder.makePlaceholder`'s `mark`). Registered first, so its first
    /// event finds it; when the placeholder is not put in place after all, `forget` it.
    public func watch(_ file: Int32, as placeholder: KnownPlaceholder) throws(ProviderError) {
        var info = stat()
        guard fstat(file, &info) == 0 else { throw ProviderError(.cannotSynchronize, "cannot look at the placeholder \(placeholder.path)") }
        let identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        registry.insert(placeholder, for: identity)
        do throws(PreContentGroup.Failure) {
            try group.mark(file, for: Self.marked)
        } catch {
            registry.remove(identity)
            throw ProviderError(.cannotSynchronize, "cannot mark the placeholder \(placeholder.path) for hydration: \(error.description)")
        }
    }

    /// The events a placeholder is marked for: its reads, and its opens (a hole-skipping
    /// copier reads no hole, so its open is the only moment to hydrate the file whole).
    public static let marked: PreContentGroup.Events = [.preAccess, .openPermission]

    /// Forgets the placeholder with `identity` (its events are then allowed untouched).
    public func forget(_ identity: FileIdentity) {
        registry.remove(identity)
    }

    /// What the hydrator knows of the placeholder with `identity`, or nil.
    public func placeholder(_ identity: FileIdentity) -> KnownPlaceholder? {
        registry.placeholder(identity)
    }

    /// True while bytes of the placeholder with `identity` are being fetched.
    public func isFilling(_ identity: FileIdentity) -> Bool {
        registry.isFetching(identity)
    }

    /// How many events the loop has read (each is answered once), for status and tests.
    public var eventsSeen: Int { lock.withLock { seen } }

    /// The last reads that fetched bytes, oldest first: who pulled what.
    public var recentHydrations: [HydrationEntry] { history.all }

    /// The reads (and writes) waiting for their bytes now, longest-waiting first.
    public var hydrationsInFlight: [HydrationEntry] { history.inFlight }

    /// The identities of the placeholders registered now (none of them whole).
    public var placeholders: Set<FileIdentity> { registry.identities }

    /// Starts the event loop on its own thread. With an inherited group, first answers the
    /// events the earlier process read and never answered (EAGAIN: their reader gets an
    /// error, not zeros, and a retry is hydrated); then events already queued are read but
    /// those of other processes wait for `release` (their placeholders are not registered
    /// yet, and an unregistered file's event is allowed: zeros). The daemon's own opens
    /// (of `restore`) are let through meanwhile.
    public func start() {
        if isInherited {
            let stale = group.answerStale(below: PreContentGroup.staleNumberLimit)
            if stale > 0 { logger.notice("answered \(stale) read(s) left waiting by the previous run with EAGAIN") }
        }
        let thread = Thread { [self] in loop() }
        thread.name = "tidesync-hydrator"
        lock.withLock { self.thread = thread }
        thread.start()
    }

    /// Stops the event loop, answers the events still waiting with EIO (a reader gets an
    /// error, never the zeros it would read once the group is gone), and closes the group:
    /// its marks go with it, so no open or read waits on a loop that no longer runs (a
    /// process's own opens of a placeholder included). Lock the placeholders first.
    public func stop() {
        let running = lock.withLock { () -> Bool in
            defer { stopped = true }
            return thread != nil && !stopped
        }
        if running {
            wake?.signal()
            loopEnded.wait()
        }
        let waiting = lock.withLock { () -> Set<Int32> in
            defer { pending.removeAll() }
            return pending
        }
        for file in waiting { group.answer(PreContentGroup.Event(file: file, pid: 0, events: [], range: nil), with: .deny(EIO)) }
        group.close()
    }

    private func loop() {
        defer { loopEnded.signal() }
        while !lock.withLock({ stopped }) {
            switch wake.map(group.wait(wakingOn:)) ?? group.wait(milliseconds: 50) {
            case .timedOut: continue
            case .broken:
                logger.critical("the fanotify group can no longer be read; placeholders are not hydrated until the daemon restarts")
                return
            case .ready:
                for event in group.events() { dispatch(event) }
            }
        }
    }

    /// Serves the events `start` held back, in the order they came, and every later one at
    /// once: call it when the placeholders of an inherited group are registered.
    public func release() {
        let events = lock.withLock { () -> [PreContentGroup.Event] in
            defer { held = nil }
            return held ?? []
        }
        for event in events { route(event) }
    }

    /// Takes the event into `pending` (answered once from here on), then holds it or routes it.
    private func dispatch(_ event: PreContentGroup.Event) {
        let holding = lock.withLock { () -> Bool in
            seen += 1
            pending.insert(event.file)
            guard event.pid != getpid(), held != nil else { return false }
            held?.append(event)
            return true
        }
        if !holding { route(event) }
    }

    /// Answers at once what needs no fetch; hands a placeholder's read to a task.
    private func route(_ event: PreContentGroup.Event) {
        guard event.pid != getpid(), let identity = Self.identity(of: event.file),
              let placeholder = registry.placeholder(identity) else { return answer(event, .allow) }
        // Looked up once per event (a read of /proc): the read-ahead, the deny rule and the
        // history all name the same program.
        let program = HydrationRules.processName(of: event.pid)
        if let range = event.range, mayHydrate(program) {
            readAhead(after: Self.wanted(range, size: placeholder.size, alignment: alignment), of: identity, through: event.file)
        }
        let opening = event.events.contains(.openPermission)
        let intent = AccessIntent.of(pid: event.pid, file: identity, opening: opening)
        guard let (wanted, reader) = request(event, of: placeholder, by: program, intent: intent) else {
            // Nothing to fetch. An open or a write still waits until the bytes already
            // readable are recorded: the file's tag and mark (its ctime) change no more
            // under the program, and no record is made after its write.
            let persists = intent == .reading && !opening ? [] : registry.persists(of: identity)
            guard !persists.isEmpty else { return answer(event, .allow) }
            Task(executorPreference: HydrationExecutor.shared) {
                for persist in persists { await persist.value }
                self.answer(event, .allow)
            }
            return
        }
        guard !rules.denyHydration.contains(reader.program ?? "") else { return refuse(event, reader) }
        Task(executorPreference: HydrationExecutor.shared) { await self.serve(event, wanted: wanted, of: identity, for: reader) }
    }

    /// The bytes `event` needs fetched, and who asks; nil when none. A read needs what it
    /// reads; a write, an open for writing or a truncation the whole file, so it never lands
    /// in a file with holes (see `AccessIntent`); an open for reading needs the whole file
    /// when its program skips holes, nothing otherwise.
    private func request(_ event: PreContentGroup.Event, of placeholder: KnownPlaceholder,
                         by program: String?, intent: AccessIntent) -> (ByteRange, HydrationEntry)? {
        let opening = event.events.contains(.openPermission)
        guard let whole = Self.needsWholeFile(intent, opening: opening, skipsHoles: rules.hydrateOnOpen.contains(program ?? "")) else {
            return nil
        }
        let wanted = Self.wanted(whole ? nil : event.range, size: placeholder.size, alignment: alignment)
        let missing = placeholder.present.missing(in: wanted).reduce(Int64(0)) { $0 + $1.length }
        guard missing > 0 else { return nil }
        return (wanted, HydrationEntry(program: program, pid: event.pid, path: placeholder.path, bytes: missing,
                                       writing: intent == .writing))
    }

    /// Whether an access with `intent` needs the whole file (true), the range it names
    /// (false) or nothing (nil): the old bytes of a file being emptied are thrown away, and
    /// an open for reading fetches only for a program that skips holes (`skipsHoles`).
    static func needsWholeFile(_ intent: AccessIntent, opening: Bool, skipsHoles: Bool) -> Bool? {
        switch intent {
        case .emptying: return nil
        case .writing: return true
        case .reading where opening, .unknown where opening: return skipsHoles ? true : nil
        case .reading: return false
        case .unknown: return true
        }
    }

    /// False for a program of `deny_hydration` (its reads fetch nothing, read-ahead included).
    private func mayHydrate(_ program: String?) -> Bool {
        !rules.denyHydration.contains(program ?? "")
    }

    /// A program of `deny_hydration` reading bytes a placeholder lacks: EPERM, nothing fetched.
    private func refuse(_ event: PreContentGroup.Event, _ reader: HydrationEntry) {
        let who = "\(reader.program ?? "a process") (pid \(reader.pid))"
        logger.info("\(who) may not hydrate \(reader.path) (deny_hydration): its read of \(reader.bytes) missing bytes is refused")
        answer(event, .deny(EPERM))
    }

    private static func identity(of file: Int32) -> FileIdentity? {
        var info = stat()
        return fstat(file, &info) == 0 ? FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)) : nil
    }

    /// The bytes an event asks for, clamped to the file and widened to `alignment`: a
    /// missing range or a count of 0 means "to the end of the file".
    static func wanted(_ range: (offset: UInt64, count: UInt64)?, size: Int64, alignment: Int64) -> ByteRange {
        let offset = min(Int64(clamping: range?.offset ?? 0), size)
        let count = range?.count ?? 0
        let end = count == 0 ? size : min(size, offset + Int64(clamping: count))
        return ByteRange(offset: offset, length: end - offset).aligned(to: alignment, fileSize: size)
    }

    /// Answers `event` unless `stop` answered it already (its descriptor is closed then,
    /// and its number may be another file's).
    func answer(_ event: PreContentGroup.Event, _ response: PreContentGroup.Response) {
        guard lock.withLock({ pending.remove(event.file) != nil }) else { return }
        if !group.answer(event, with: response) {
            logger.error("could not answer a fanotify event of pid \(event.pid)")
        }
    }
}
