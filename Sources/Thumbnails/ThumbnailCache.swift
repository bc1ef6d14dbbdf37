// The freedesktop thumbnail cache ($XDG_CACHE_HOME/thumbnails), as GLib and KDE check it.
// Durability: a thumbnail is written to a temporary name in its own folder, fsync'ed, then
// renamed over the final name, so a reader sees a whole file or none; folders are made 0700
// and files 0600, as the Thumbnail Managing Standard asks.
import ContentHash
import Foundation
import Glibc

/// One user's thumbnail cache.
public struct ThumbnailCache: Sendable {
    /// The cache's folder, which holds `normal`, `large`, `x-large` and `xx-large`.
    public let root: URL

    /// The most bytes of a cached thumbnail read to check it.
    static let maximumReadSize = 32 << 20

    /// A cache in `root` (made when the first thumbnail is stored).
    public init(root: URL) { self.root = root }

    /// The cache GLib uses for `environment`: `$XDG_CACHE_HOME/thumbnails` when that is set
    /// and not empty, else `$HOME/.cache/thumbnails`.
    public static func standard(environment: [String: String]) -> ThumbnailCache {
        let cache = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.cache"
        return ThumbnailCache(root: URL(fileURLWithPath: cache).appendingPathComponent("thumbnails"))
    }

    /// The cache's file name for a URI: its MD5 in lowercase hex, then ".png".
    public static func fileName(forURI uri: String) -> String {
        var digest = ContentDigest(.md5)
        digest.update(Array(uri.utf8))
        return digest.hex() + ".png"
    }

    /// Where the thumbnail of `uri` at `size` lives (whether or not it exists).
    public func path(forURI uri: String, size: ThumbnailSize) -> URL {
        root.appendingPathComponent(size.rawValue).appendingPathComponent(Self.fileName(forURI: uri))
    }

    /// Stores `png` as the thumbnail of `uri` at `size`, replacing any, making missing
    /// folders (0700) on the way. The file is 0600.
    public func store(_ png: [UInt8], forURI uri: String, size: ThumbnailSize) throws(ThumbnailError) {
        let target = path(forURI: uri, size: size)
        let folder = target.deletingLastPathComponent().path
        try Self.makeFolders(folder)
        var template = Array("\(folder)/.\(target.lastPathComponent).XXXXXX".utf8CString)
        let descriptor = mkstemp(&template)
        guard descriptor >= 0 else { throw Self.failure("create a file in \(folder)") }
        let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        do throws(ThumbnailError) {
            defer { close(descriptor) }
            try Self.writeAll(png, to: descriptor, path: temporary)
            guard fsync(descriptor) == 0 else { throw Self.failure("fsync \(temporary)") }
        } catch {
            unlink(temporary)
            throw error
        }
        guard rename(temporary, target.path) == 0 else {
            let failure = Self.failure("rename to \(target.path)")
            unlink(temporary)
            throw failure
        }
    }

    /// Removes the thumbnails of `uri` at every size; missing ones are no error.
    public func remove(uri: String) {
        for size in ThumbnailSize.allCases { unlink(path(forURI: uri, size: size).path) }
    }

    /// Whether a thumbnail of `uri` at `size` exists and is valid for a file of this mtime
    /// (seconds) and size (bytes), by GLib's rules: tEXt `Thumb::URI` byte for byte,
    /// `Thumb::MTime` the same integer, and `Thumb::Size`, when present, the same integer.
    public func validThumbnail(uri: String, mtime: Int64, fileSize: Int64, size: ThumbnailSize) -> Bool {
        guard let png = Self.read(path(forURI: uri, size: size).path), let entries = PNGText.entries(in: png),
              PNGText.value("Thumb::URI", in: entries) == Array(uri.utf8),
              PNGText.value("Thumb::MTime", in: entries) == Array(String(mtime).utf8) else { return false }
        guard let stored = PNGText.value("Thumb::Size", in: entries) else { return true }
        return stored == Array(String(fileSize).utf8)
    }
}
