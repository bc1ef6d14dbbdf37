// Finding the JPEG preview a file carries in its first bytes: the EXIF thumbnail of a JPEG,
// the previews of TIFF-based raws. Pure: the caller fetches the bytes it is told about.

/// What `EmbeddedThumbnail.locate` found in a file's first bytes.
public enum EmbeddedThumbnailSearch: Equatable, Sendable {
    /// A JPEG of `length` bytes at `offset`, inside the file (it may lie past the prefix:
    /// fetch that range).
    case found(offset: Int, length: Int)
    /// The structure is valid so far and goes on past the prefix: call again with at least
    /// the file's first `upTo` bytes. Never more than `maximumFurther` past the prefix given.
    case needMore(upTo: Int)
    /// No usable embedded thumbnail.
    case none
}

/// Locates embedded JPEG thumbnails and previews.
public enum EmbeddedThumbnail {
    /// The largest embedded JPEG taken, in bytes.
    public static let maximumLength = 4 << 20
    /// How far past the prefix a `needMore` may reach.
    public static let maximumFurther = 1 << 20
    /// What a `needMore` asks for beyond what the parse needs next, so the next segment or
    /// directory usually comes in the same request.
    static let slack = 64 << 10
    /// The most IFDs and JPEG segments walked: a chain that loops ends here.
    static let maximumSteps = 64

    /// Searches `prefix`, the first bytes of a file of `fileSize` bytes (a JPEG, or a TIFF or
    /// TIFF-based raw). Among several previews it takes the smallest whose long side is known
    /// to be at least `longSide`, else the largest whose size is known, else the first found.
    /// Every offset is checked: a hostile file gives `.none`, never a range outside the file.
    public static func locate(in prefix: [UInt8], fileSize: Int, longSide: Int = 256) -> EmbeddedThumbnailSearch {
        let window = ByteWindow(prefix, fileSize: fileSize)
        var found: [Preview] = []
        do throws(ParseStop) {
            guard let base = try tiffBase(in: window) else { return .none }
            try collect(TIFFStructure(window, base: base), into: &found)
        } catch .needMore(let end) where found.isEmpty {
            guard end > window.bytes.count, end - window.bytes.count <= maximumFurther else { return .none }
            let further = min(window.bytes.count + maximumFurther, end + slack)
            return .needMore(upTo: min(window.fileSize, further))
        } catch {
            // A structure broken further on: the previews found before it still stand.
        }
        guard let best = choose(among: found, longSide: longSide) else { return .none }
        return .found(offset: best.offset, length: best.length)
    }

    /// The offset of the TIFF structure: in a JPEG's Exif segment, or 0 in a TIFF; nil in a
    /// JPEG without EXIF or another kind of file.
    static func tiffBase(in window: ByteWindow) throws(ParseStop) -> Int? {
        switch ImageKind.sniff(Array(window.bytes.prefix(8))) {
        case .jpeg: try exifBase(in: window)
        case .tiff: 0
        default: nil
        }
    }

    /// The offset of the TIFF header in a JPEG's APP1 "Exif" segment, or nil when the image
    /// data starts before one.
    static func exifBase(in window: ByteWindow) throws(ParseStop) -> Int? {
        var position = 2
        for _ in 0..<maximumSteps * 4 {
            guard try window.byte(position) == 0xFF else { throw .invalid }
            let marker = try window.byte(position + 1)
            switch marker {
            case 0xFF: position += 1; continue
            case 0x01, 0xD0...0xD7: position += 2; continue
            case 0xD8, 0x00: throw .invalid
            case 0xD9, 0xDA: return nil
            default: break
            }
            let length = try window.uint16(position + 2, bigEndian: true)
            guard length >= 2 else { throw .invalid }
            if marker == 0xE1, length >= 16 {
                try window.require(position + 4, 6)
                if window.matches(position + 4, Array("Exif".utf8) + [0, 0]) { return position + 10 }
            }
            position += 2 + length
        }
        throw .invalid
    }
}
