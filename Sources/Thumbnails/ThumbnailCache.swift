// The freedesktop thumbnail cache, as GLib (gio/thumbnail-verify.c) and KDE check it:
// `$XDG_CACHE_HOME/thumbnails/{normal,large,x-large,xx-large}/<md5 of the file URI>.png`, a
// PNG whose tEXt chunks Thumb::URI, Thumb::MTime (seconds) and Thumb::Size must match the
// file byte for byte. Written to a temporary name in the same folder and renamed, mode 0600,
// folders 0700.
import ContentHash
import CThumbnailCodecs
import Foundation
import Glibc

/// A cache size: at most this many pixels on the long side.
public enum ThumbnailSize: String, CaseIterable, Sendable {
    case normal, large, xLarge = "x-large", xxLarge = "xx-large"

    public var pixels: Int {
        switch self {
        case .normal: 128
        case .large: 256
        case .xLarge: 512
        case .xxLarge: 1024
        }
    }
}

/// Why no thumbnail was made of an image.
public struct ThumbnailError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}

public enum ThumbnailRenderer {
    /// Pixels and sides beyond which an image is not decoded (checked from the header,
    /// before any allocation), and what the libraries may allocate.
    static let limits = tsc_limits(max_side: 30_000, max_pixels: 200_000_000, fit: 0, max_memory: 256 << 20)

    /// Decodes a JPEG or PNG, shrinks it to fit `size` (never enlarging), and encodes the
    /// cache's PNG with the tEXt keys GLib checks.
    public static func cachePNG(from encoded: [UInt8], size: ThumbnailSize, uri: String, mtime: Int64, fileSize: Int64,
                                mimeType: String?) throws(ThumbnailError) -> [UInt8] {
        var limits = limits
        limits.fit = UInt32(size.pixels)
        var image = tsc_image()
        let status: Int32
        switch ImageKind.sniff(Array(encoded.prefix(8))) {
        case .jpeg: status = encoded.withUnsafeBufferPointer { tsc_jpeg_decode($0.baseAddress, $0.count, &limits, &image) }
        case .png: status = encoded.withUnsafeBufferPointer { tsc_png_decode($0.baseAddress, $0.count, &limits, &image) }
        default: throw ThumbnailError("not a JPEG or PNG")
        }
        defer { tsc_free(image.pixels) }
        guard status == Int32(TSC_OK.rawValue), let pixels = image.pixels else {
            throw ThumbnailError(message(of: &image.message, otherwise: "cannot be decoded"))
        }
        var text = [("Thumb::URI", uri), ("Thumb::MTime", String(mtime)), ("Thumb::Size", String(fileSize)),
                    ("Software", "tidesync")]
        if let mimeType { text.append(("Thumb::Mimetype", mimeType)) }
        return try encode(pixels, width: image.width, height: image.height, channels: image.channels, text: text)
    }

    /// A PNG of `pixels` with uncompressed tEXt chunks.
    static func encode(_ pixels: UnsafePointer<UInt8>, width: UInt32, height: UInt32, channels: UInt32,
                       text: [(String, String)]) throws(ThumbnailError) -> [UInt8] {
        let keys = text.map { strdup($0.0) }, values = text.map { strdup($0.1) }
        defer { (keys + values).forEach { free($0) } }
        var out = tsc_buffer()
        let status = keys.map { UnsafePointer($0) }.withUnsafeBufferPointer { keyPointers in
            values.map { UnsafePointer($0) }.withUnsafeBufferPointer { valuePointers in
                tsc_png_encode(pixels, width, height, channels, keyPointers.baseAddress, valuePointers.baseAddress, text.count, &out)
            }
        }
        defer { tsc_free(out.bytes) }
        guard status == Int32(TSC_OK.rawValue), let bytes = out.bytes else {
            throw ThumbnailError(message(of: &out.message, otherwise: "cannot be encoded as PNG"))
        }
        return Array(UnsafeBufferPointer(start: bytes, count: out.count))
    }

    static func message<T>(of field: inout T, otherwise: String) -> String {
        let text = withUnsafeBytes(of: &field) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return text.isEmpty ? otherwise : text
    }
}

/// The thumbnail cache of one user.
public struct ThumbnailCache: Sendable {
    /// The `thumbnails` folder.
    public let root: URL

    public init(root: URL) { self.root = root }

    /// `$XDG_CACHE_HOME/thumbnails`, or `$HOME/.cache/thumbnails`.
    public static func standard(environment: [String: String]) -> ThumbnailCache {
        let cache = environment["XDG_CACHE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.cache"
        return ThumbnailCache(root: URL(fileURLWithPath: cache + "/thumbnails"))
    }

    /// The URI of `path` exactly as GLib's g_filename_to_uri makes it: bytes other than
    /// letters, digits and `!$&'()*+,-./:=@_~` escaped as %XX (upper case).
    public static func uri(forPath path: String) -> String {
        let allowed = Set("!$&'()*+,-./:=@_~".utf8)
        var uri = "file://"
        for byte in path.utf8 {
            let plain = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || allowed.contains(byte)
            uri += plain ? String(UnicodeScalar(byte)) : String(format: "%%%02X", byte)
        }
        return uri
    }

    /// `md5(uri)` in lower-case hex, and `.png`.
    public static func fileName(forURI uri: String) -> String {
        var digest = ContentDigest(.md5)
        digest.update(Array(uri.utf8))
        return digest.hex().lowercased() + ".png"
    }

    public func path(forURI uri: String, size: ThumbnailSize) -> URL {
        root.appendingPathComponent(size.rawValue).appendingPathComponent(Self.fileName(forURI: uri))
    }

    /// Writes `png` as the thumbnail of `uri`: a temporary file in the same folder, fsynced,
    /// renamed into place; the file 0600, missing folders made 0700.
    public func store(_ png: [UInt8], forURI uri: String, size: ThumbnailSize) throws {
        let target = path(forURI: uri, size: size)
        let folder = target.deletingLastPathComponent().path
        if access(folder, W_OK) != 0 {
            // ~/.cache too may be missing: every missing folder is made 0700.
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
        let temporary = folder + "/.tidesync-" + UUID().uuidString + ".png"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.failure(temporary) }
        var written = 0
        let complete = png.withUnsafeBytes { raw -> Bool in
            while written < raw.count {
                let count = write(fd, raw.baseAddress! + written, raw.count - written)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return false }
                written += count
            }
            return fsync(fd) == 0
        }
        let failure = complete ? nil : Self.failure(temporary)
        close(fd)
        guard failure == nil, rename(temporary, target.path) == 0 else {
            let error = failure ?? Self.failure(target.path)
            unlink(temporary)
            throw error
        }
    }

    /// Removes the thumbnails of `uri`, every size.
    public func remove(uri: String) {
        for size in ThumbnailSize.allCases { unlink(path(forURI: uri, size: size).path) }
    }

    static func failure(_ path: String) -> CocoaError {
        CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path, NSLocalizedDescriptionKey: String(cString: strerror(errno))])
    }
}
