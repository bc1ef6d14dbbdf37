// EXIF orientation (tag 0x0112 in IFD0): cameras store a portrait photo's pixels as the
// sensor read them and say in this tag how to turn them. The embedded thumbnail is stored the
// same way, so a thumbnail made without it lies on its side. Pure.

/// How an image's stored pixels are turned to stand upright (EXIF's values 1 to 8).
public enum ExifOrientation: Int, Sendable, CaseIterable {
    case up = 1
    case upMirrored
    case down
    case downMirrored
    case leftMirrored
    case right
    case rightMirrored
    case left

    /// Whether width and height trade places.
    var swapsSides: Bool { rawValue >= 5 }

    /// The stored pixel shown at column `x`, row `y` of the upright image, for a stored
    /// image of `width` x `height`.
    func source(x: Int, y: Int, width: Int, height: Int) -> (x: Int, y: Int) {
        switch self {
        case .up: (x, y)
        case .upMirrored: (width - 1 - x, y)
        case .down: (width - 1 - x, height - 1 - y)
        case .downMirrored: (x, height - 1 - y)
        case .leftMirrored: (y, x)  // transpose
        case .right: (y, height - 1 - x)  // turned 90° clockwise
        case .rightMirrored: (width - 1 - y, height - 1 - x)  // transverse
        case .left: (width - 1 - y, x)  // turned 90° counter-clockwise
        }
    }
}

extension EmbeddedThumbnail {
    /// The orientation a JPEG's EXIF segment or a TIFF's IFD0 gives, from the file's first
    /// bytes; `.up` when there is none, or the structure is broken or goes on past them.
    public static func orientation(in prefix: [UInt8]) -> ExifOrientation {
        let window = ByteWindow(prefix, fileSize: prefix.count)
        do throws(ParseStop) {
            let base: Int?
            switch ImageKind.sniff(Array(prefix.prefix(8))) {
            case .jpeg: base = try exifBase(in: window)
            case .tiff: base = 0
            default: base = nil
            }
            guard let base else { return .up }
            let tiff = try TIFFStructure(window, base: base)
            guard let entry = try tiff.directory(at: tiff.firstIFD).entries.first(where: { $0.tag == 0x0112 }),
                  entry.type == 3, let value = try tiff.values(of: entry).first else { return .up }
            return ExifOrientation(rawValue: value) ?? .up
        } catch {
            return .up
        }
    }
}

extension DecodedImage {
    /// The image turned as `orientation` says, so it stands upright.
    public func oriented(_ orientation: ExifOrientation) -> DecodedImage {
        guard orientation != .up else { return self }
        let (outWidth, outHeight) = orientation.swapsSides ? (height, width) : (width, height)
        var turned = [UInt8](repeating: 0, count: pixels.count)
        pixels.withUnsafeBufferPointer { from in
            turned.withUnsafeMutableBufferPointer { to in
                for y in 0..<outHeight {
                    for x in 0..<outWidth {
                        let source = orientation.source(x: x, y: y, width: width, height: height)
                        let (at, into) = ((source.y * width + source.x) * channels, (y * outWidth + x) * channels)
                        for channel in 0..<channels { to[into + channel] = from[at + channel] }
                    }
                }
            }
        }
        return DecodedImage(width: outWidth, height: outHeight, channels: channels, pixels: turned,
                            sourceWidth: orientation.swapsSides ? sourceHeight : sourceWidth,
                            sourceHeight: orientation.swapsSides ? sourceWidth : sourceHeight)
    }
}
