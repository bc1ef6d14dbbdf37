import SyncEngine

/// Paths that have settled and are looked at now.
public struct SettledChanges: Sendable, Equatable {
    /// Each path to stat; true when everything below it is scanned too (a folder that
    /// appeared or moved here: files made in it before its watch existed raised no event).
    public var paths: [RemotePath: Bool] = [:]
    /// Events were lost (or the loop asked for it): the whole sync folder is scanned.
    public var fullScan = false
    /// Paths that reached the cap (changing, or held open by a writer, for that long):
    /// they are synced as they are now, writer or not.
    public var overdue: Set<RemotePath> = []

    public init(paths: [RemotePath: Bool] = [:], fullScan: Bool = false, overdue: Set<RemotePath> = []) {
        self.paths = paths
        self.fullScan = fullScan
        self.overdue = overdue
    }

    public var isEmpty: Bool { paths.isEmpty && !fullScan }
}

/// Coalesces watch events per path until they settle — the watcher's events are hints,
/// never the truth (Syncthing's lesson). A path is due when it has been quiet for
/// `debounce`, or at the latest `cap` after its first event, so a file written forever
/// is still synced. Pure: time is passed in, nothing is read from disk.
///
/// Two rules keep a partial view from ever reading as deletions:
/// - the two ends of a move are one group, due together (a rename is seen whole: the
///   item is gone from one place *and* found at the other);
/// - a path waits while a folder above it has events still settling (a folder renamed
///   just after a file in it was saved is looked at once, under its new name).
public struct ChangeAggregator: Sendable {
    public var debounce: Duration
    public var cap: Duration

    struct Entry: Sendable {
        var first: ContinuousClock.Instant
        var last: ContinuousClock.Instant
        /// Scan everything below too.
        var subtree: Bool
        /// The move group the path belongs to, if any.
        var group: Int?
    }

    private(set) var entries: [RemotePath: Entry] = [:]
    private var groups: [Int: Set<RemotePath>] = [:]
    private var nextGroup = 0
    /// Since when the whole folder needs a scan (events were lost).
    private var fullScanSince: ContinuousClock.Instant?
    private var fullScanLast: ContinuousClock.Instant?

    public init(debounce: Duration, cap: Duration) {
        self.debounce = debounce
        self.cap = max(cap, debounce)
    }

    /// How many paths wait to settle.
    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty && fullScanSince == nil }

    /// Takes one event in.
    public mutating func add(_ event: WatchEvent, at now: ContinuousClock.Instant) {
        switch event {
        case .changed(let path), .removed(let path):
            touch(path, at: now)
        case .folderAppeared(let path), .unwatched(let path, _):
            touch(path, subtree: true, at: now)
        case .moved(let from, let to, let isFolder):
            if isFolder { carry(from: from, to: to) }
            touch(from, at: now)
            touch(to, subtree: isFolder, at: now)
            link(from, to)
        case .overflow:
            fullScanSince = fullScanSince ?? now
            fullScanLast = now
        case .rootGone:
            break  // the loop stops the domain; nothing here is decided from it
        }
        // Any event postpones a pending full scan until the storm is over (up to the cap).
        if fullScanSince != nil { fullScanLast = now }
    }

    /// Puts paths back that could not be looked at yet (a writer still holds the file):
    /// they are due again after another quiet period, but never later than the cap
    /// counted from their first event.
    public mutating func putBack(_ paths: [RemotePath: Bool], firstSeen: ContinuousClock.Instant,
                                 at now: ContinuousClock.Instant) {
        for (path, subtree) in paths {
            touch(path, subtree: subtree, at: now)
            entries[path]!.first = min(entries[path]!.first, firstSeen)
        }
    }

    /// Asks for a scan of the whole folder once events have been quiet for `debounce`.
    public mutating func requestFullScan(at now: ContinuousClock.Instant) {
        fullScanSince = fullScanSince ?? now
        fullScanLast = now
    }

    /// The earliest time something can be due; nil when nothing waits.
    public func deadline() -> ContinuousClock.Instant? {
        if let full = fullScanDue { return full }
        return dueTimes().values.min()
    }

    /// Removes and returns what is due at `now`; the first events of what it returns
    /// are the earliest of `firstSeen` (for `putBack`).
    public mutating func takeDue(at now: ContinuousClock.Instant) -> (changes: SettledChanges, firstSeen: ContinuousClock.Instant?) {
        if let due = fullScanDue {
            // What waits is covered by the full scan to come.
            return due <= now ? takeAll() : (SettledChanges(), nil)
        }
        var changes = SettledChanges()
        var first: ContinuousClock.Instant?
        for (path, time) in dueTimes() where time <= now {
            let entry = entries.removeValue(forKey: path)!
            changes.paths[path] = entry.subtree
            if entry.first + cap <= now { changes.overdue.insert(path) }
            first = min(first ?? entry.first, entry.first)
            if let group = entry.group {
                groups[group]?.remove(path)
                if groups[group]?.isEmpty == true { groups[group] = nil }
            }
        }
        return (changes, first)
    }

    /// Removes everything waiting and says a full scan covers it.
    public mutating func takeAll() -> (changes: SettledChanges, firstSeen: ContinuousClock.Instant?) {
        let first = entries.values.map(\.first).min()
        entries = [:]
        groups = [:]
        fullScanSince = nil
        fullScanLast = nil
        return (SettledChanges(fullScan: true), first)
    }

    // MARK: Internals

    private var fullScanDue: ContinuousClock.Instant? {
        guard let since = fullScanSince, let last = fullScanLast else { return nil }
        return min(last + debounce, since + cap)
    }

    private mutating func touch(_ path: RemotePath, subtree: Bool = false, at now: ContinuousClock.Instant) {
        if var entry = entries[path] {
            entry.last = max(entry.last, now)
            entry.subtree = entry.subtree || subtree
            entries[path] = entry
        } else {
            entries[path] = Entry(first: now, last: now, subtree: subtree, group: nil)
        }
    }

    /// A folder moved: what waits below its old place now waits below the new one.
    private mutating func carry(from: RemotePath, to: RemotePath) {
        let below = entries.keys.filter { $0 != from && $0.isDescendant(of: from) }
        for old in below {
            guard let new = old.replacingPrefix(from, with: to), let entry = entries.removeValue(forKey: old) else { continue }
            if let existing = entries[new] {
                entries[new] = Entry(first: min(existing.first, entry.first), last: max(existing.last, entry.last),
                                     subtree: existing.subtree || entry.subtree, group: existing.group ?? entry.group)
            } else {
                entries[new] = entry
            }
            if let group = entry.group {
                groups[group]?.remove(old)
                groups[group]?.insert(new)
            }
        }
    }

    /// Puts both paths (and the groups they are in already) into one group.
    private mutating func link(_ a: RemotePath, _ b: RemotePath) {
        let existing = [entries[a]?.group, entries[b]?.group].compactMap { $0 }
        let group = existing.first ?? { defer { nextGroup += 1 }; return nextGroup }()
        var members: Set<RemotePath> = [a, b]
        for old in Set(existing) {
            members.formUnion(groups.removeValue(forKey: old) ?? [])
        }
        for member in members where entries[member] != nil { entries[member]!.group = group }
        groups[group] = members.filter { entries[$0] != nil }
    }

    /// When each waiting path is due: its own quiet period (or cap), at the latest of its
    /// move group, and not before any folder above it that still waits — the two rules
    /// applied until neither moves a time (times only rise, so this ends): a move's old end
    /// carried below a folder that waits must hold its new end back too, or the new end
    /// settles alone and its files read as copies of the old (two-client test, Apache seed
    /// 31337 beside a heavy load: they were uploaded as new files).
    func dueTimes() -> [RemotePath: ContinuousClock.Instant] {
        func own(_ entry: Entry) -> ContinuousClock.Instant { min(entry.last + debounce, entry.first + cap) }
        var due: [RemotePath: ContinuousClock.Instant] = [:]
        due.reserveCapacity(entries.count)
        for (path, entry) in entries { due[path] = own(entry) }
        var moved = true
        while moved {
            moved = false
            for members in groups.values {
                guard let latest = members.compactMap({ due[$0] }).max() else { continue }
                for member in members where due[member].map({ $0 < latest }) == true {
                    due[member] = latest
                    moved = true
                }
            }
            for (path, time) in due {
                var latest = time
                var cursor = path
                while !cursor.isRoot {
                    cursor = cursor.parent
                    if let above = due[cursor], above > latest { latest = above }
                }
                if latest > time {
                    due[path] = latest
                    moved = !groups.isEmpty  // without groups, one pass over the folders above is final
                }
            }
        }
        return due
    }
}
