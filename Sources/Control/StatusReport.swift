// The `tidesync status --json` schema, version 1 (documented in packaging/schema/status-schema.md and
// packaging/schema/status.schema.json). Stable: fields are only ever added; none is renamed, retyped or
// removed. Optional fields are left out when they have no value.

import Foundation

/// What `tidesync status` reports: the daemon and each domain.
public struct StatusReport: Codable, Sendable, Equatable {
    /// The schema version this binary writes.
    public static let currentSchemaVersion = 1

    /// The schema version of this report.
    public var schemaVersion: Int
    /// When the report was made.
    public var generatedAt: Date
    public var daemon: DaemonInfo
    /// The domains, in configuration file order.
    public var domains: [DomainStatus]

    public init(generatedAt: Date, daemon: DaemonInfo, domains: [DomainStatus]) {
        schemaVersion = Self.currentSchemaVersion
        self.generatedAt = generatedAt
        self.daemon = daemon
        self.domains = domains
    }
}

/// The daemon process.
public struct DaemonInfo: Codable, Sendable, Equatable {
    /// False when the report was read from the state DBs because no daemon answered.
    public var running: Bool
    public var pid: Int?
    public var startedAt: Date?
    /// The configuration file in use.
    public var configFile: String?

    public init(running: Bool, pid: Int? = nil, startedAt: Date? = nil, configFile: String? = nil) {
        self.running = running
        self.pid = pid
        self.startedAt = startedAt
        self.configFile = configFile
    }
}

/// One domain's state.
public struct DomainStatus: Codable, Sendable, Equatable {
    /// What the domain is doing.
    public enum State: String, Codable, Sendable {
        /// Opened; the first pass has not finished.
        case starting
        /// Both sides agree; waiting for changes.
        case idle
        /// A pass is running or work is pending.
        case syncing
        /// No new transfer starts: paused by the user, or deletions held back (`paused`).
        case paused
        /// The domain cannot sync until a condition clears (`error` says which, and when it retries).
        case error
        /// The daemon is not running; the rest comes from the state DB.
        case notRunning
    }

    public var name: String
    public var state: State
    /// Why it is paused, when `state` is `paused`.
    public var paused: PauseInfo?
    /// The cause, when `state` is `error` (also set while paused by the mass-delete guard).
    public var error: ErrorInfo?
    /// The local folder, absolute.
    public var localFolder: String
    /// The remote: a URL without credentials, or `file://` and a path.
    public var remote: String
    /// When both sides last agreed.
    public var lastCompleteSync: Date?
    /// Transfers in flight.
    public var transfers: [Transfer]
    public var pending: PendingSummary
    public var conflicts: ConflictSummary
    /// Items whose last attempt failed, with their backoff.
    public var itemsInError: [ItemInError]
    public var counts: Counts
    public var watcher: WatcherHealth
    /// Folders the last pass could not read, on either side (nothing below them is synced
    /// until they can be read); left out when there are none.
    public var unreadableFolders: [UnreadableFolderStatus]?
    /// Names in one folder that differ only in Unicode normalisation, a warning; left out
    /// when there are none (and when the daemon is not running).
    public var normalisationTwins: [NameTwins]?
    /// Deletions held back until the user confirms them (also `paused` by `massDelete`).
    public var heldDeletions: HeldDeletions?
    /// Set after a pass found the domain pointed at another remote and merged both trees.
    public var remoteChanged: String?
    /// Whether files on demand runs for a domain that asked for it, and why not when it
    /// does not; left out for a domain with `mode = "off"`.
    public var filesOnDemand: String?
    /// With files on demand: the last reads that fetched bytes, oldest first (who pulled
    /// what); left out when there are none.
    public var recentHydrations: [HydrationStatus]?
    /// With files on demand (or placeholders left from it): how many files are placeholders;
    /// `counts` has their bytes on disk against the total.
    public var placeholders: PlaceholderCounts?
    /// With files on demand: the programs waiting for a placeholder's bytes now, longest
    /// waiting first (`at` is when they started to wait); left out when there are none.
    public var hydrationsInFlight: [HydrationStatus]?

    public init(name: String, state: State, paused: PauseInfo? = nil, error: ErrorInfo? = nil, localFolder: String,
                remote: String, lastCompleteSync: Date? = nil, transfers: [Transfer] = [],
                pending: PendingSummary = PendingSummary(), conflicts: ConflictSummary = ConflictSummary(),
                itemsInError: [ItemInError] = [], counts: Counts = Counts(), watcher: WatcherHealth = WatcherHealth()) {
        self.name = name
        self.state = state
        self.paused = paused
        self.error = error
        self.localFolder = localFolder
        self.remote = remote
        self.lastCompleteSync = lastCompleteSync
        self.transfers = transfers
        self.pending = pending
        self.conflicts = conflicts
        self.itemsInError = itemsInError
        self.counts = counts
        self.watcher = watcher
    }
}

/// A folder the last pass could not read: both sides of it are left as they were.
public struct UnreadableFolderStatus: Codable, Sendable, Equatable {
    /// The folder below the domain root; "" for the root itself.
    public var path: String
    /// `local` (the sync folder) or `remote`.
    public var side: String
    /// Why, for people: "permission denied", "the server refused to list it (HTTP 403 Forbidden)".
    public var reason: String

    public init(path: String, side: String, reason: String) {
        self.path = path
        self.side = side
        self.reason = reason
    }
}

/// One read of a placeholder that fetched bytes.
public struct HydrationStatus: Codable, Sendable, Equatable {
    /// The reading process's name (`/proc/PID/comm`); nil when it was gone before it was looked up.
    public var program: String?
    public var pid: Int
    /// The file, below the domain root.
    public var path: String
    /// The bytes fetched for that read.
    public var bytes: Int64
    public var at: Date
    /// True for a write into a placeholder (the whole file is fetched before it goes on);
    /// left out for a read.
    public var writing: Bool?

    public init(program: String?, pid: Int, path: String, bytes: Int64, at: Date, writing: Bool? = nil) {
        self.program = program
        self.pid = pid
        self.path = path
        self.bytes = bytes
        self.at = at
        self.writing = writing
    }
}

/// How many files of a domain are placeholders.
public struct PlaceholderCounts: Codable, Sendable, Equatable {
    /// Holding none of their bytes.
    public var dataless: Int
    /// Holding some of them.
    public var partial: Int

    public init(dataless: Int, partial: Int) {
        self.dataless = dataless
        self.partial = partial
    }
}

/// Why a domain is paused.
public struct PauseInfo: Codable, Sendable, Equatable {
    /// `user` (tidesync pause) or `massDelete` (deletions held until confirmed).
    public var by: String
    /// A sentence for people.
    public var reason: String

    public init(by: String, reason: String) {
        self.by = by
        self.reason = reason
    }
}

/// A condition that stops a domain.
public struct ErrorInfo: Codable, Sendable, Equatable {
    /// The error code: `notAuthenticated`, `serverUnreachable`, `serverFailedItem` (items failed in a row), `insufficientQuota`, `localDiskFull`,
    /// `cannotSynchronize` (e.g. the local folder is missing), `watchLimitReached`, …
    public var code: String
    /// What went wrong and what to do.
    public var message: String
    /// Since when.
    public var since: Date?
    /// When the daemon tries again.
    public var nextRetry: Date?

    public init(code: String, message: String, since: Date? = nil, nextRetry: Date? = nil) {
        self.code = code
        self.message = message
        self.since = since
        self.nextRetry = nextRetry
    }
}

/// One upload or download in flight.
public struct Transfer: Codable, Sendable, Equatable {
    /// The item's path below the domain root.
    public var path: String
    /// `upload` or `download`.
    public var direction: String
    public var bytesDone: Int64
    public var bytesTotal: Int64?
    /// Bytes per second since the transfer started.
    public var bytesPerSecond: Double?
    /// Seconds left at that rate.
    public var secondsLeft: Double?
    public var startedAt: Date

    public init(path: String, direction: String, bytesDone: Int64, bytesTotal: Int64?, bytesPerSecond: Double?,
                secondsLeft: Double?, startedAt: Date) {
        self.path = path
        self.direction = direction
        self.bytesDone = bytesDone
        self.bytesTotal = bytesTotal
        self.bytesPerSecond = bytesPerSecond
        self.secondsLeft = secondsLeft
        self.startedAt = startedAt
    }
}

/// Items that changed and are not yet synced.
public struct PendingSummary: Codable, Sendable, Equatable {
    public var count: Int
    /// The oldest few, oldest first.
    public var oldest: [PendingItem]

    public init(count: Int = 0, oldest: [PendingItem] = []) {
        self.count = count
        self.oldest = oldest
    }
}

/// One item waiting to be synced.
public struct PendingItem: Codable, Sendable, Equatable {
    public var path: String
    /// The step it waits for: `upload`, `download`, `delete-remote`, …
    public var step: String
    /// Since when it has been waiting.
    public var since: Date
    /// Why it waits: `queued` (its turn comes), `paused`, `backoff` (an earlier attempt failed),
    /// `parked` (the domain waits for a condition to clear), `held` (deletions held back).
    public var reason: String

    public init(path: String, step: String, since: Date, reason: String) {
        self.path = path
        self.step = step
        self.since = since
        self.reason = reason
    }
}

/// The conflicts recorded.
public struct ConflictSummary: Codable, Sendable, Equatable {
    public var count: Int
    /// The newest few, newest first.
    public var newest: [ConflictEntry]

    public init(count: Int = 0, newest: [ConflictEntry] = []) {
        self.count = count
        self.newest = newest
    }
}

/// One conflict copy.
public struct ConflictEntry: Codable, Sendable, Equatable {
    public var domain: String
    /// The path both sides changed; the server's version keeps it.
    public var original: String
    /// Where this machine's version was kept.
    public var copy: String
    public var detectedAt: Date
    /// The version both sides last agreed on (an ETag); absent when the local item was new.
    public var baseVersion: String?
    /// The server's version that keeps `original` (an ETag).
    public var remoteVersion: String?
    /// This machine's version: its size and modification time when the conflict was found.
    public var localSize: Int64
    public var localModified: Date

    public init(domain: String, original: String, copy: String, detectedAt: Date, baseVersion: String?,
                remoteVersion: String?, localSize: Int64, localModified: Date) {
        self.domain = domain
        self.original = original
        self.copy = copy
        self.detectedAt = detectedAt
        self.baseVersion = baseVersion
        self.remoteVersion = remoteVersion
        self.localSize = localSize
        self.localModified = localModified
    }
}

/// The answer to `conflicts`: newest first, over the domains asked.
public struct ConflictList: Codable, Sendable, Equatable {
    public var schemaVersion: Int
    public var conflicts: [ConflictEntry]

    public init(conflicts: [ConflictEntry]) {
        schemaVersion = StatusReport.currentSchemaVersion
        self.conflicts = conflicts
    }
}

/// One item whose last attempt failed.
public struct ItemInError: Codable, Sendable, Equatable {
    public var path: String
    public var step: String
    public var attempts: Int
    public var lastError: String
    /// Not retried before this time.
    public var nextRetry: Date?

    public init(path: String, step: String, attempts: Int, lastError: String, nextRetry: Date?) {
        self.path = path
        self.step = step
        self.attempts = attempts
        self.lastError = lastError
        self.nextRetry = nextRetry
    }
}

/// What the domain holds.
public struct Counts: Codable, Sendable, Equatable {
    public var files: Int
    public var folders: Int
    public var symlinks: Int
    public var bundles: Int
    /// The content bytes on this disk.
    public var bytesOnDisk: Int64
    /// The content bytes of every file and bundle.
    public var bytesTotal: Int64

    public init(files: Int = 0, folders: Int = 0, symlinks: Int = 0, bundles: Int = 0, bytesOnDisk: Int64 = 0,
                bytesTotal: Int64 = 0) {
        self.files = files
        self.folders = folders
        self.symlinks = symlinks
        self.bundles = bundles
        self.bytesOnDisk = bytesOnDisk
        self.bytesTotal = bytesTotal
    }
}

/// Sibling names that differ only in Unicode normalisation (NFC `café`, NFD `café`): both are
/// kept as they are here and on the server, but macOS and many clients take them for one.
public struct NameTwins: Codable, Sendable, Equatable {
    /// The paths below the domain root, byte for byte as on disk and on the server.
    public var paths: [String]
    /// What it means and what to do.
    public var message: String

    public init(paths: [String], message: String = NameTwins.standardMessage) {
        self.paths = paths
        self.message = message
    }

    /// The warning `status` gives.
    public static let standardMessage = "these names differ only in Unicode normalisation; both are kept as they are here and on the server (tidesync renames nothing), but macOS and some sync clients take them for one name: rename one of them if more than this machine uses the folder"
}

/// The file watcher's health.
public struct WatcherHealth: Codable, Sendable, Equatable {
    /// inotify watches in use; absent when no watcher runs.
    public var watchesInUse: Int?
    /// Full rescans made because the kernel's event queue overflowed, since the daemon started.
    public var overflowRescans: Int
    /// True when fs.inotify.max_user_watches was reached (changes below some folders are
    /// only seen by the periodic rescan).
    public var watchLimitReached: Bool

    public init(watchesInUse: Int? = nil, overflowRescans: Int = 0, watchLimitReached: Bool = false) {
        self.watchesInUse = watchesInUse
        self.overflowRescans = overflowRescans
        self.watchLimitReached = watchLimitReached
    }
}

extension StatusReport {
    /// The exit status of `tidesync status`: 3 when the daemon is not running, else 2 when a
    /// domain is in error, else 1 when one is syncing, starting, paused or has pending work,
    /// else 0 (every domain idle and in sync).
    public var exitCode: Int32 {
        guard daemon.running else { return 3 }
        if domains.contains(where: { $0.state == .error }) { return 2 }
        if domains.contains(where: { $0.state != .idle || $0.pending.count > 0 }) { return 1 }
        return 0
    }
}
