// The placeholder port: the one way the replica puts a remote file's bytes into the sync
// folder, in the spirit of Nextcloud's `Vfs` (and its `VfsOff`). The runner hands every
// remote file it brings down to the port and records what the port reports; whether the
// file arrives whole or as a dataless placeholder hydrated later by byte range is the
// port's policy, never the runner's or the reconciler's. `PlaceholdersOff` is today's
// behaviour (whole files, nothing dataless); files on demand adds a fanotify one.
import Foundation
import SyncEngine

/// A file the port has put in place.
public struct PlacedFile: Sendable, Equatable {
    /// The file's stat on disk after the port's last write, to record as agreed.
    public var stat: LocalStat
    /// What it holds.
    public var state: Materialization
    /// The version its bytes (present or to come) belong to, as the server named it; nil
    /// when the server gave none.
    public var version: ETag?

    public init(stat: LocalStat, state: Materialization, version: ETag?) {
        self.stat = stat
        self.state = state
        self.version = version
    }
}

/// Where a file's bytes come from: the engine's downloads of one version of one item. The
/// runner makes one for each file it brings down; a port calls only what it needs.
public struct RemoteBytes: Sendable {
    /// Downloads the whole version into the given new file (going on from a cut download
    /// when the file's name says it is a resumable part); returns the version's ETag.
    public let whole: @Sendable (URL) async throws(ProviderError) -> ETag?
    /// Writes at least the given range of the version into the given open file, at the
    /// range's own offsets, unflushed; returns the range written.
    public let range: @Sendable (ByteRange, Int32) async throws(ProviderError) -> ByteRange
    /// The item the bytes belong to, as it will be recorded; nil when the runner cannot say
    /// (a port then brings the file down whole).
    public let item: ItemIdentifier?

    public init(whole: @escaping @Sendable (URL) async throws(ProviderError) -> ETag?,
                range: @escaping @Sendable (ByteRange, Int32) async throws(ProviderError) -> ByteRange,
                item: ItemIdentifier? = nil) {
        self.whole = whole
        self.range = range
        self.item = item
    }
}

/// How remote files become local ones: create (whole or dataless), hydrate a range,
/// materialize, evict, and say what a file holds. Implementations write only through the
/// `LocalFolder`'s guarded writes, so a user's file is never overwritten unseen.
public protocol PlaceholderPort: Sendable {
    /// Puts the remote file `entry` at `path`, replacing the local file that had `replacing`
    /// (nil: nothing may be there), in the form the domain's policy chooses. `temporary` is
    /// the runner's temporary file beside `path` (a resumable part for a strong version).
    func bringDown(_ entry: RemoteEntry, at path: RemotePath, replacing: LocalStat?, temporary: URL,
                   bytes: RemoteBytes) async throws(ProviderError) -> PlacedFile

    /// Makes sure `range` of the file at `path` is on disk, fetching what is missing;
    /// returns what the file holds afterwards.
    func hydrate(_ path: RemotePath, range: ByteRange, bytes: RemoteBytes) async throws(ProviderError) -> Materialization

    /// Fetches every missing byte of the file at `path`; returns it once it is a plain file.
    func materialize(_ path: RemotePath, bytes: RemoteBytes) async throws(ProviderError) -> PlacedFile

    /// Frees the bytes of the file at `path`, keeping it as a dataless placeholder of the
    /// same size and time. Refused where files on demand is off, and for files with
    /// changes not yet synced or open for writing.
    func evict(_ path: RemotePath) async throws(ProviderError) -> PlacedFile

    /// What the file at `path` holds.
    func state(of path: RemotePath) throws(ProviderError) -> Materialization

    /// True when `bringDown` may need the file's item identifier (`RemoteBytes.item`) before
    /// the file is placed (a dataless placeholder carries it); when false the runner leaves
    /// choosing it to the record, and does not read the state DB before the transfer.
    var placesByItem: Bool { get }
}

extension PlaceholderPort {
    public var placesByItem: Bool { true }
}
