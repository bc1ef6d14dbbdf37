import Foundation
import SyncEngine
import SystemCalls

/// The placeholder port of a domain without files on demand: every remote file comes down
/// whole, through a temporary file renamed into place, and nothing is ever dataless. The
/// null object of `PlaceholderPort` (Nextcloud's `VfsOff`).
public struct PlaceholdersOff: PlaceholderPort {
    public let folder: LocalFolder
    /// Where the files it brings down are made durable and put in place, a round at a time.
    let placements: PlacementRounds

    public init(folder: LocalFolder) {
        self.folder = folder
        placements = PlacementRounds(folder: folder)
    }

    public func bringDown(_ entry: RemoteEntry, at path: RemotePath, replacing: LocalStat?, temporary: URL,
                          bytes: RemoteBytes) async throws(ProviderError) -> PlacedFile {
        // The store leaves the file unsynced where a round of placements makes it durable
        // with the others written meanwhile, then puts it in place (`PlacementRounds`).
        let (version, stat) = try await placements.bringDown(temporary, at: path, replacing: replacing,
                                                             modificationDate: entry.modificationDate) {
            roundSyncs async throws(ProviderError) -> ETag? in
            let fetched: Result<ETag?, ProviderError> = await TransferSlot.$callerSyncs.withValue(roundSyncs) {
                do throws(ProviderError) { return .success(try await bytes.whole(temporary)) } catch { return .failure(error) }
            }
            return try fetched.get()
        }
        return PlacedFile(stat: stat, state: .materialized, version: version ?? entry.etag)
    }

    /// Files come down whole: the item is chosen when the file is recorded.
    public var placesByItem: Bool { false }

    /// Every file is whole: nothing to fetch.
    public func hydrate(_ path: RemotePath, range: ByteRange, bytes: RemoteBytes) async throws(ProviderError) -> Materialization {
        try state(of: path)
    }

    /// Every file this port placed is whole: returns it as it is. A placeholder left from
    /// files on demand that still lacks bytes is refused: nothing here can fill it, and its
    /// holes would be read as zeros.
    public func materialize(_ path: RemotePath, bytes: RemoteBytes) async throws(ProviderError) -> PlacedFile {
        let file = try existingFile(path)
        guard !folder.holdsUnfetchedBytes(path) else {
            throw ProviderError(.cannotSynchronize, "\(folder.absolute(path)) is a placeholder whose bytes were never all "
                                + "downloaded, and files on demand is not running for this domain; it is not read until it is "
                                + "downloaded again")
        }
        return PlacedFile(stat: file.stat, state: .materialized, version: nil)
    }

    public func evict(_ path: RemotePath) async throws(ProviderError) -> PlacedFile {
        _ = try existingFile(path)
        throw ProviderError(.cannotSynchronize, "\(folder.absolute(path)) stays downloaded: files on demand is off for this "
                            + "domain; set mode = \"auto\" under [domain.placeholders] in the config to let files be evicted")
    }

    public func state(of path: RemotePath) throws(ProviderError) -> Materialization {
        _ = try existingFile(path)
        return .materialized
    }

    private func existingFile(_ path: RemotePath) throws(ProviderError) -> LocalScanEntry {
        guard let entry = folder.entry(at: path) else {
            throw ProviderError(.noSuchItem, "\(folder.absolute(path)) does not exist")
        }
        guard entry.kind == .file else {
            throw ProviderError(.noSuchItem, "\(folder.absolute(path)) is not a file (it is a \(entry.kind))")
        }
        return entry
    }
}
