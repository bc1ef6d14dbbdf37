// The maker's work in the cache, on the writer's thread (as the cache's owner): decode,
// scale, encode and store each size, and clear the sizes that would hide the new ones.
import Glibc
import SyncEngine
import Thumbnails

extension ThumbnailMaker {
    /// Makes and stores the thumbnails of `target` from `source`, unless the file changed
    /// since the fetch began: stamped with the old mtime and size, GLib would take the
    /// thumbnail for the new bytes. Runs on `writer`.
    func render(_ source: ThumbnailSource, for target: Target) -> Outcome {
        guard self.target(target.id, at: target.path) == target else { return .failed("it changed while its thumbnail was made") }
        // The file's own orientation: a preview is stored as the camera stored the image; a
        // server's preview is upright already.
        let orientation = source.origin == .server ? .up : EmbeddedThumbnail.orientation(in: source.header)
        do throws(ThumbnailError) {
            let made = try ThumbnailRenderer.cachePNGs(from: source.bytes, sizes: Self.sizes, uri: target.uri, mtime: target.mtime,
                                                       fileSize: target.size, mimeType: nil, orientation: orientation)
            for (size, png) in made { try cache.store(png, forURI: target.uri, size: size) }
        } catch {
            if case .cache = error { return .cacheFailed(error.description) }
            return .none(error.description)
        }
        clearLargerSizes(of: target)
        return .made(origin: source.origin, fetched: source.fetched)
    }

    /// Removes the sizes not made here that do not describe this version: GLib and KDE take
    /// the largest size present, so an `x-large` the desktop made while the file was here,
    /// of other bytes, would hide the new ones and count as stale.
    private func clearLargerSizes(of target: Target) {
        for size in ThumbnailSize.allCases where !Self.sizes.contains(size)
        && !cache.validThumbnail(uri: target.uri, mtime: target.mtime, fileSize: target.size, size: size) {
            unlink(cache.path(forURI: target.uri, size: size).path)
        }
    }
}
