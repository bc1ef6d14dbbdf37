/// A folder a pass could not list, on one side (DESIGN.md, "Safety rails"): what is below
/// it is unknown, never empty. Both sides of its subtree are taken as the state DB
/// recorded them, so nothing is planned below it; the next pass tries it again.
public struct UnreadableFolder: Codable, Hashable, Sendable {
    /// Which side could not be listed.
    public enum Side: String, Codable, Sendable {
        /// The sync folder on this machine (EACCES, EIO, EMFILE, …).
        case local
        /// The remote store (HTTP 403 or 5xx for that folder, a store folder it cannot open).
        case remote
    }

    /// The folder, below the domain root (the root itself when the whole side was unreadable).
    public var path: RemotePath
    public var side: Side
    /// Why, for people: "permission denied", "the server refused to list it (HTTP 403 Forbidden)".
    public var reason: String

    public init(path: RemotePath, side: Side, reason: String) {
        self.path = path
        self.side = side
        self.reason = reason
    }
}

/// What a recursive listing of a remote folder found, and which folders below it the store
/// could not list.
public struct RemoteListing: Sendable {
    /// Every entry listed below the folder (without the folder itself). An unlisted folder
    /// is here when its parent listed it; nothing below it is.
    public var entries: [RemoteEntry]
    /// Folders below the listed one that could not be listed, with why. Their contents are
    /// unknown: a caller must never read them as deleted.
    public var unlisted: [RemotePath: ProviderError]
    /// True when the server leaves names that begin with "." out of its listings (nginx's
    /// dav-ext module skips them, files and folders alike), while it serves them when asked
    /// for by name: such an item missing from the listing is not known to be deleted.
    public var hidesDotNames = false

    public init(entries: [RemoteEntry], unlisted: [RemotePath: ProviderError] = [:]) {
        self.entries = entries
        self.unlisted = unlisted
    }

    /// Adds a walk's batch of entries; the first one is taken without a copy (it shares the
    /// store's array: a store that lists at once hands everything over in it).
    public mutating func collect(_ batch: [RemoteEntry]) {
        if entries.isEmpty { entries = batch } else { entries.append(contentsOf: batch) }
    }

    /// The entries, or the first unlisted folder's failure: for callers that need the whole
    /// tree (a bundle's members).
    public func complete(below path: RemotePath) throws(ProviderError) -> [RemoteEntry] {
        guard let (folder, error) = unlisted.min(by: { $0.key < $1.key }) else { return entries }
        throw ProviderError(error.code == .notAuthenticated ? .cannotSynchronize : error.code,
                            "\(folder) (below \(path.isRoot ? "the sync folder" : path.description)) could not be listed: \(error.message)",
                            underlying: error.underlying)
    }
}

/// Folders whose subtrees a pass cannot see: a path is inside when it is one of them or
/// below one.
public struct UnknownSubtrees: Sendable, Equatable {
    public private(set) var folders: Set<RemotePath>

    public init(_ folders: some Sequence<RemotePath> = []) {
        self.folders = Set(folders)
    }

    public var isEmpty: Bool { folders.isEmpty }

    public mutating func insert(_ folder: RemotePath) { folders.insert(folder) }

    /// True when `path` is one of the folders or below one.
    public func contains(_ path: RemotePath) -> Bool {
        guard !folders.isEmpty else { return false }
        var cursor = path
        while true {
            if folders.contains(cursor) { return true }
            if cursor.isRoot { return false }
            cursor = cursor.parent
        }
    }
}

extension RemoteEntry {
    /// The remote side of `record` at `path` as the state DB last recorded it, or nil when no
    /// remote version was recorded. A folder's recorded ETag is left out: it is stale as soon
    /// as anything inside changes, so folders count by existence.
    public init?(recorded record: ItemRecord, at path: RemotePath) {
        guard record.kind == .folder || record.remoteETag != nil else { return nil }
        self.init(path: path, kind: record.kind, size: record.size,
                  etag: record.kind == .folder ? nil : record.remoteETag, fileID: record.remoteFileID,
                  symlinkTarget: record.symlinkTarget)
    }
}
