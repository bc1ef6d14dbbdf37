import Foundation
@_exported import SyncModel

/// The engine's port to a remote store (WebDAV server, local directory, in-memory fake).
///
/// Contract, checked by the contract suite over every adapter:
/// - Every write of an existing item is guarded by the version it was based on and
///   fails with `versionMismatch` — never silently overwrites — when the store holds
///   another version. A failed guard is reported only after the store was asked
///   afresh and really holds another version (Apache's weak-ETag second is no conflict).
/// - A reader of the store never sees a half-written file: uploads land whole or not at all.
/// - Errors are `ProviderError`s; an unreachable or failing server is never reported as
///   `noSuchItem`.
/// - Paths are `RemotePath`s below the store's root; names are passed through unchanged.
public protocol RemoteStore: Sendable {
    /// The entry at `path`; throws `noSuchItem` when there is none.
    func entry(at path: RemotePath) async throws(ProviderError) -> RemoteEntry

    /// The direct children of the folder at `path`, without the folder itself, in no set order.
    func children(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry]

    /// Every entry below the folder at `path` (recursively), without the folder itself.
    /// Uses one request where the store allows it (PROPFIND Depth infinity), else walks.
    func descendants(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry]

    /// Every item in the tree named `name` (a scratch name, which only one write used):
    /// where another client's folder move took it. Default: `descendants` of the root.
    func items(named name: String) async throws(ProviderError) -> [RemotePath]

    /// Every entry below the folder at `path`, as `descendants`, and the folders below it
    /// the store could not list (a 403 or 5xx for that folder, a store folder it cannot
    /// open) with why: what is below those is unknown, never deleted. Throws as
    /// `descendants` when `path` itself cannot be listed (server down, 5xx on it).
    func listing(below path: RemotePath) async throws(ProviderError) -> RemoteListing

    /// Lists the tree below `path` as `listing(below:)` does, in the same order, handing the
    /// entries to `visit` as they come instead of keeping them: a store that lists folder by
    /// folder holds one folder at a time. Returns the listing without its entries (the
    /// folders it could not list, whether it hides dot names). Default: `listing(below:)`.
    func walk(below path: RemotePath, visit: ([RemoteEntry]) -> Void) async throws(ProviderError) -> RemoteListing

    /// Writes the bytes of the file at `path` (or only `range`) to `destination`, a new
    /// file the caller owns; fails with `versionMismatch` when `version` is given and
    /// the store holds another. Returns the version the bytes belong to.
    func download(_ path: RemotePath, range: ByteRange?, version: ETag?, to destination: URL,
                  progress: TransferProgress?) async throws(ProviderError) -> ETag?

    /// Writes the bytes `range` of the file at `path`, which must still be `version`, into
    /// the open file `descriptor` at the same offsets (a placeholder filled in place: no
    /// scratch file, no second copy). Nothing is flushed: the caller fsyncs before it
    /// counts on the bytes. Returns how many bytes were written (the range clamped to the
    /// file's end); on a failure some of the range may have been written, and none of it
    /// may be counted on.
    func download(_ path: RemotePath, range: ByteRange, version: ETag, intoDescriptor descriptor: Int32,
                  progress: TransferProgress?) async throws(ProviderError) -> Int64

    /// Writes the whole file at `path` to `destination`, which may hold the start of
    /// `version` left by a download that was cut: a store that can goes on from there
    /// (only while the server still has `version`), any other starts over. Otherwise as
    /// `download(_:range:version:to:progress:)`.
    func download(_ path: RemotePath, version: ETag?, resumingInto destination: URL,
                  progress: TransferProgress?) async throws(ProviderError) -> ETag?

    /// Stores the local file `source` at `path`, streamed, guarded by `condition`.
    /// Returns the entry as the store now lists it.
    func upload(from source: URL, to path: RemotePath, condition: WriteCondition,
                progress: TransferProgress?) async throws(ProviderError) -> RemoteEntry

    /// Creates the folder at `path`; `filenameCollision` when something exists there,
    /// `parentMissing` when its parent does not.
    func makeFolder(at path: RemotePath) async throws(ProviderError) -> RemoteEntry

    /// Creates a symlink at `path` pointing at `target` (kept verbatim, never followed).
    func makeSymlink(at path: RemotePath, target: String,
                     condition: WriteCondition) async throws(ProviderError) -> RemoteEntry

    /// Moves the item at `source` to `destination`, never overwriting
    /// (`filenameCollision` when the destination exists); guarded by `version` when given.
    func move(_ source: RemotePath, to destination: RemotePath,
              version: ETag?) async throws(ProviderError) -> RemoteEntry

    /// Deletes the item at `path` (folders recursively), guarded by `version` when given.
    func delete(_ path: RemotePath, version: ETag?) async throws(ProviderError)

    /// Copies the item at `source` (a folder with its whole subtree) to `destination`, which
    /// must be free, on the server, without the bytes passing through the client. Returns
    /// false when the store cannot copy (the caller then uploads instead).
    func copy(_ source: RemotePath, to destination: RemotePath) async throws(ProviderError) -> Bool

    /// Swaps the bundle at `path` with the folder at `replacement` in one atomic step, if
    /// the bundle's version (`BundleManifest.bundleEntry`, derived from its members) is still
    /// `version`: a reader sees the old bundle or the new one, never none. The old version
    /// is left at `replacement`. `versionMismatch` when the bundle changed, `noSuchItem` when
    /// it is gone. Returns false when the store cannot (WebDAV has no exchange: the caller
    /// then sets the old version aside and moves the new one in).
    func exchangeBundle(_ path: RemotePath, with replacement: RemotePath,
                        version: ETag) async throws(ProviderError) -> Bool
}

extension RemoteStore {
    public func items(named name: String) async throws(ProviderError) -> [RemotePath] {
        try await descendants(of: .root).filter { $0.path.name == name }.map(\.path)
    }

    /// Stores that never list a part of a tree: `descendants`, with nothing unlisted.
    public func listing(below path: RemotePath) async throws(ProviderError) -> RemoteListing {
        RemoteListing(entries: try await descendants(of: path))
    }

    /// Stores that list a tree at once hand it over at once.
    public func walk(below path: RemotePath, visit: ([RemoteEntry]) -> Void) async throws(ProviderError) -> RemoteListing {
        var listing = try await listing(below: path)
        visit(listing.entries)
        listing.entries = []
        return listing
    }

    /// Stores that cannot resume a download start over.
    public func download(_ path: RemotePath, version: ETag?, resumingInto destination: URL,
                         progress: TransferProgress?) async throws(ProviderError) -> ETag? {
        try await download(path, range: nil, version: version, to: destination, progress: progress)
    }

    /// Stores that can only write new files download into a scratch file beside the
    /// system's temporary files and copy it in.
    public func download(_ path: RemotePath, range: ByteRange, version: ETag, intoDescriptor descriptor: Int32,
                         progress: TransferProgress?) async throws(ProviderError) -> Int64 {
        let scratch = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("tidesync-range-\(UUID().uuidString)")
        defer { unlink(scratch.path) }
        _ = try await download(path, range: range, version: version, to: scratch, progress: progress)
        let input = open(scratch.path, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw ProviderError(.cannotSynchronize, "cannot read the fetched bytes of \(path)") }
        defer { close(input) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var copied: Int64 = 0
        while copied < range.length {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, min($0.count, Int(range.length - copied))) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw ProviderError(.cannotSynchronize, "cannot read the fetched bytes of \(path)") }
            if count == 0 { break }
            var done = 0
            while done < count {
                let written = buffer.withUnsafeBytes { pwrite(descriptor, $0.baseAddress! + done, count - done, off_t(range.offset + copied) + off_t(done)) }
                if written < 0, errno == EINTR { continue }
                guard written > 0 else {
                    let code = written < 0 ? errno : EIO
                    let kind: ProviderError.Code = code == ENOSPC || code == EDQUOT ? .localDiskFull : .cannotSynchronize
                    throw ProviderError(kind, "cannot write the fetched bytes of \(path)", underlying: String(cString: strerror(code)))
                }
                done += written
            }
            copied += Int64(count)
        }
        return copied
    }

    /// Stores without a server-side copy say so.
    public func copy(_ source: RemotePath, to destination: RemotePath) async throws(ProviderError) -> Bool { false }

    /// Stores without an atomic exchange say so.
    public func exchangeBundle(_ path: RemotePath, with replacement: RemotePath,
                               version: ETag) async throws(ProviderError) -> Bool { false }
}
