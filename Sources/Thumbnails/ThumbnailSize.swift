// The freedesktop thumbnail sizes and the image kinds thumbnails are made from. Pure.

/// A folder of the freedesktop thumbnail cache; the raw value is the folder's name.
public enum ThumbnailSize: String, CaseIterable, Sendable {
    case normal
    case large
    case xLarge = "x-large"
    case xxLarge = "xx-large"

    /// The most pixels a thumbnail of this size has on its long side.
    public var pixels: Int {
        switch self {
        case .normal: 128
        case .large: 256
        case .xLarge: 512
        case .xxLarge: 1024
        }
    }
}

/// An image format a thumbnail can come from.
public enum ImageKind: Sendable, Equatable {
    case jpeg
    case png
    /// TIFF and the TIFF-based raw formats (DNG, NEF, CR2, ARW): only their embedded JPEG
    /// previews are used.
    case tiff

    /// The kind a file name's extension names (case-insensitive), or nil.
    public static func of(name: String) -> ImageKind? {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        switch name[name.index(after: dot)...].lowercased() {
        case "jpg", "jpeg", "jpe": return .jpeg
        case "png": return .png
        case "tif", "tiff", "dng", "nef", "cr2", "arw": return .tiff
        default: return nil
        }
    }

    /// The kind the first bytes of a file show (at least 8 are needed for PNG), or nil.
    public static func sniff(_ prefix: [UInt8]) -> ImageKind? {
        if prefix.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if prefix.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if prefix.starts(with: [0x49, 0x49, 0x2A, 0x00]) || prefix.starts(with: [0x4D, 0x4D, 0x00, 0x2A]) { return .tiff }
        return nil
    }
}
