/// Which remote a domain's state DB describes: the remote's normalised location and, where
/// the server has one, the file id of its root. The rows of the state DB are true only of
/// that remote; read against another one, every recorded item missing there would look
/// deleted (DESIGN.md, "Safety rails").
public struct RemoteIdentity: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The normalised URL (no credentials, lower-case scheme and host, no default port,
    /// a path ending in `/`), or `file://` and the absolute path of a local-directory store.
    public var location: String
    /// The file id of the remote's root (`oc:fileid` on Nextcloud and ownCloud, the inode of
    /// a local-directory store's root); nil when the server reports none (Apache, rclone).
    public var rootFileID: String?

    public init(location: String, rootFileID: String? = nil) {
        self.location = location
        self.rootFileID = rootFileID
    }

    /// `https://host/dav/` or `https://host/dav/ (root file id 42)`, for logs and status.
    public var description: String {
        rootFileID.map { "\(location) (root file id \($0))" } ?? location
    }

    /// What a pass does about the remote it is about to read.
    public enum Verdict: Equatable, Sendable {
        /// The DB already describes this remote: sync as usual.
        case same
        /// Nothing contradicts the DB, but what is recorded is incomplete (a DB from before
        /// identities were kept, an empty DB, or a root file id seen for the first time):
        /// record `current` and sync as usual.
        case record
        /// Another remote than the one the DB describes: drop the rows, record `current` in
        /// the same transaction, and merge both trees as a first sync.
        case changed(from: RemoteIdentity)
    }

    /// Compares the identity the DB recorded with the one the domain now has. Pure.
    ///
    /// The location decides first. Root file ids are compared only when both are known:
    /// a server that stops reporting one (a proxy in front of it, a changed WebDAV module)
    /// says nothing about its root, and a root id seen for the first time is recorded.
    public static func verdict(recorded: RemoteIdentity?, current: RemoteIdentity) -> Verdict {
        guard let recorded else { return .record }
        if recorded.location != current.location { return .changed(from: recorded) }
        if let before = recorded.rootFileID, let now = current.rootFileID {
            return before == now ? .same : .changed(from: recorded)
        }
        return recorded.rootFileID == nil && current.rootFileID != nil ? .record : .same
    }
}
