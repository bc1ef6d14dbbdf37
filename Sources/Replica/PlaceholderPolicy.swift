import SyncEngine

/// Which remote files come down as dataless placeholders, and what a mode change or a new
/// remote version does to a file already here: the `[domain.placeholders]` policy as pure
/// decisions (issue 15 item 1). A fanotify placeholder port asks it; the runner never does.
public struct PlaceholderPolicy: Sendable, Equatable {
    /// `off`: every file whole. `auto`: files of at least `minimumSize` start dataless.
    /// `all`: every file starts dataless.
    public enum Mode: String, Sendable, Equatable, CaseIterable {
        case off, auto, all
    }

    /// How a file comes down.
    public enum Form: Sendable, Equatable {
        case whole
        case dataless
    }

    /// What becomes of a file already in the folder.
    public enum Adjustment: Sendable, Equatable {
        /// Stays as it is.
        case keep
        /// Every missing byte is fetched (a placeholder that must now be whole).
        case materialize
        /// Its bytes are stale (another version on the server): it becomes dataless again.
        case dropRanges
    }

    public var mode: Mode
    /// With `.auto`, smaller files always come down whole.
    public var minimumSize: Int64
    /// Paths always kept whole (`keep_local` globs; a folder's glob covers what is below).
    public var keepLocal: ExcludeList

    public init(mode: Mode = .off, minimumSize: Int64 = 16 << 20, keepLocal: [String] = []) {
        self.mode = mode
        self.minimumSize = minimumSize
        self.keepLocal = ExcludeList(patterns: keepLocal)
    }

    /// How the remote file `entry` comes down. Bundles, empty files, pinned files and
    /// `keep_local` paths always whole.
    public func form(of entry: RemoteEntry, pinned: Bool) -> Form {
        guard entry.kind == .file, entry.size > 0, !pinned, !keepLocal.excludes(entry.path) else { return .whole }
        switch mode {
        case .off: return .whole
        case .auto: return entry.size >= minimumSize ? .dataless : .whole
        case .all: return .dataless
        }
    }

    /// What this policy does to the file at `path` that holds `state` of its version. A
    /// file that must be whole now (mode `off`, pinned, `keep_local`) is materialized; a
    /// file already whole is never evicted by a mode change (only `evict` does that).
    public func adjustment(of path: RemotePath, holding state: Materialization, pinned: Bool) -> Adjustment {
        guard state != .materialized else { return .keep }
        return mode == .off || pinned || keepLocal.excludes(path) ? .materialize : .keep
    }

    /// What a new remote version does to the file at `path` that held `state` of the old
    /// one. A whole file is downloaded again like any file (not asked here); a placeholder's
    /// ranges belong to the old version: it becomes dataless again, unless it must be whole,
    /// in which case the new version is downloaded.
    public func adjustmentForNewVersion(of path: RemotePath, holding state: Materialization, pinned: Bool) -> Adjustment {
        guard state != .materialized else { return .keep }
        return adjustment(of: path, holding: state, pinned: pinned) == .materialize ? .materialize : .dropRanges
    }
}
