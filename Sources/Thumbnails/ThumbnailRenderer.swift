// Decoding, shrinking and encoding through libjpeg and libpng (CThumbnailCodecs). Pure: bytes
// in, bytes out; the memory a decode takes follows the output's size (see the C header).
import CThumbnailCodecs
import Glibc

/// An image decoded to 8-bit samples.
public struct DecodedImage: Sendable, Equatable {
    /// The decoded (possibly shrunk) size in pixels.
    public let width: Int
    public let height: Int
    /// 3 (RGB) or 4 (RGBA, not premultiplied).
    public let channels: Int
    /// `width * height * channels` bytes, rows top to bottom.
    public let pixels: [UInt8]
    /// The image's own size in pixels, by its header, before any shrinking.
    public let sourceWidth: Int
    public let sourceHeight: Int
}

/// Makes the cache's PNG thumbnails.
public enum ThumbnailRenderer {
    /// The most pixels a side, and the most pixels in all, of an image that is decoded.
    public static let maximumSide = 30_000
    public static let maximumPixels = 200_000_000
    /// The most bytes libjpeg may allocate, and the largest interlaced PNG read whole.
    ///
    /// A baseline JPEG needs little whatever its size: libjpeg keeps a few rows of 8x8 blocks,
    /// and DCT scaling (1/8 for a 200-megapixel photo shrunk to 1024) shrinks them further. A
    /// progressive (or multi-scan) JPEG is another matter: libjpeg keeps every DCT coefficient
    /// until its last scan, 128 bytes per block per component, whatever the scale — 3 bytes a
    /// pixel at 4:2:0 and 6 at 4:4:4, so 600 MB for 200 megapixels even at 1/8, and a 4 MiB
    /// file can claim that size in its header. 64 MiB admits progressive JPEGs of up to about
    /// 22 megapixels (4:2:0), more than any embedded preview and most progressive photos
    /// within `thumbnail_max_fetch` (8 MiB by default); larger ones get no thumbnail rather
    /// than letting one header take hundreds of megabytes.
    public static let maximumMemory = 64 << 20
    /// The most scans a JPEG may have; more is refused as corrupt. Each scan of a progressive
    /// JPEG is a pass over all its coefficients, so a hostile file of thousands of tiny scans
    /// costs minutes of CPU; libjpeg-turbo advises a limit for untrusted input (`djpeg
    /// -maxscans`), and real encoders write at most a few dozen.
    public static let maximumScans = 500

    /// Decodes a JPEG or PNG, shrunk to fit `longSide` pixels on its long side (never
    /// enlarged; 0 keeps its size). A header past the limits is refused before any pixel is
    /// allocated.
    public static func decode(_ encoded: [UInt8], fitting longSide: Int) throws(ThumbnailError) -> DecodedImage {
        let kind = ImageKind.sniff(Array(encoded.prefix(8)))
        guard kind == .jpeg || kind == .png else { throw .notAnImage }
        var limits = tsc_limits(max_side: UInt32(maximumSide), max_pixels: UInt64(maximumPixels),
                                fit: UInt32(clamping: max(0, longSide)), max_memory: maximumMemory,
                                max_scans: UInt32(maximumScans))
        var image = tsc_image()
        let status = encoded.withUnsafeBufferPointer { bytes in
            kind == .jpeg ? tsc_jpeg_decode(bytes.baseAddress, bytes.count, &limits, &image)
                : tsc_png_decode(bytes.baseAddress, bytes.count, &limits, &image)
        }
        defer { tsc_free(image.pixels) }
        try check(status, message: message(of: &image.message),
                  size: (Int(image.source_width), Int(image.source_height)))
        let count = Int(image.width) * Int(image.height) * Int(image.channels)
        guard let pixels = image.pixels else { throw .outOfMemory }
        return DecodedImage(width: Int(image.width), height: Int(image.height), channels: Int(image.channels),
                            pixels: Array(UnsafeBufferPointer(start: pixels, count: count)),
                            sourceWidth: Int(image.source_width), sourceHeight: Int(image.source_height))
    }

    /// Encodes `image` as a PNG with uncompressed tEXt chunks, in order. Keys are 1-79
    /// characters; neither keys nor values may hold NUL.
    public static func encodePNG(_ image: DecodedImage, text: [(key: String, value: String)]) throws(ThumbnailError) -> [UInt8] {
        guard image.width > 0, image.height > 0, image.channels == 3 || image.channels == 4,
              image.pixels.count == image.width * image.height * image.channels else { throw .unsupported("no pixels to encode") }
        guard text.allSatisfy({ !$0.key.isEmpty && $0.key.utf8.count < 80 && !$0.key.utf8.contains(0) && !$0.value.utf8.contains(0) })
        else { throw .unsupported("a PNG text key or value that cannot be written") }
        let keys = text.map { strdup($0.key) }, values = text.map { strdup($0.value) }
        defer { (keys + values).forEach { free($0) } }
        guard !(keys + values).contains(nil) else { throw .outOfMemory }
        var out = tsc_buffer()
        let status = image.pixels.withUnsafeBufferPointer { pixels in
            keys.map { UnsafePointer($0) }.withUnsafeBufferPointer { keyPointers in
                values.map { UnsafePointer($0) }.withUnsafeBufferPointer { valuePointers in
                    tsc_png_encode(pixels.baseAddress, UInt32(image.width), UInt32(image.height), UInt32(image.channels),
                                   keyPointers.baseAddress, valuePointers.baseAddress, text.count, &out)
                }
            }
        }
        defer { tsc_free(out.bytes) }
        try check(status, message: message(of: &out.message), size: (image.width, image.height))
        guard let bytes = out.bytes else { throw .outOfMemory }
        return Array(UnsafeBufferPointer(start: bytes, count: out.count))
    }

    /// Decodes a JPEG or PNG, scales it to fit `size` (never enlarging it) and encodes the
    /// cache's PNG, as `cachePNGs` does for one size, stored upright.
    public static func cachePNG(from encoded: [UInt8], size: ThumbnailSize, uri: String, mtime: Int64,
                                fileSize: Int64, mimeType: String?) throws(ThumbnailError) -> [UInt8] {
        let made = try cachePNGs(from: encoded, sizes: [size], uri: uri, mtime: mtime, fileSize: fileSize,
                                 mimeType: mimeType, orientation: .up)
        return made[0].png
    }

    /// Decodes a JPEG or PNG once, fitting the largest of `sizes`, turns it upright as
    /// `orientation` says (read from the file's own first bytes: it applies to its embedded
    /// preview too), and encodes the cache's PNG for each size, in the order given: each
    /// scaled to fit (never enlarged) by area averaging the largest one's pixels. Each has
    /// tEXt `Thumb::URI`, `Thumb::MTime` (seconds), `Thumb::Size` (bytes), `Thumb::Mimetype`
    /// when given, and `Software`. No sizes: nothing is decoded.
    public static func cachePNGs(from encoded: [UInt8], sizes: [ThumbnailSize], uri: String, mtime: Int64,
                                 fileSize: Int64, mimeType: String?,
                                 orientation: ExifOrientation) throws(ThumbnailError) -> [(size: ThumbnailSize, png: [UInt8])] {
        guard let largest = sizes.map(\.pixels).max() else { return [] }
        let image = try decode(encoded, fitting: largest).oriented(orientation)
        var text: [(key: String, value: String)] = [("Thumb::URI", uri), ("Thumb::MTime", String(mtime)),
                                                    ("Thumb::Size", String(fileSize))]
        if let mimeType { text.append(("Thumb::Mimetype", mimeType)) }
        text.append(("Software", "tidesync"))
        var made: [(size: ThumbnailSize, png: [UInt8])] = []
        for size in sizes {
            made.append((size, try encodePNG(image.shrunk(fitting: size.pixels), text: text)))
        }
        return made
    }

    /// Maps a codec status to an error.
    private static func check(_ status: Int32, message: String, size: (Int, Int)) throws(ThumbnailError) {
        switch tsc_status(rawValue: UInt32(bitPattern: status)) {
        case TSC_OK: return
        case TSC_TOO_LARGE: throw .tooLarge(width: size.0, height: size.1)
        case TSC_UNSUPPORTED: throw .unsupported(message)
        case TSC_NO_MEMORY: throw .outOfMemory
        default: throw .corrupt(message.isEmpty ? "the codec refused it" : message)
        }
    }

    /// The NUL-terminated text of a codec's message field.
    private static func message<Field>(of field: inout Field) -> String {
        withUnsafeBytes(of: &field) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}
