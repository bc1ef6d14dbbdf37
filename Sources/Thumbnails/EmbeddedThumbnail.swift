// The preview an image file carries, found from its first bytes (issue 17): a JPEG's EXIF
// thumbnail (APP1 "Exif", a TIFF structure whose IFD1 names the thumbnail's offset and
// length), or the JPEG preview of a TIFF-based raw file (DNG, NEF, CR2, ARW: a TIFF header at
// byte 0, previews in the IFD chain or its SubIFDs). Everything it reads comes from a server
// and may be hostile: every offset and count is checked, arithmetic cannot overflow, the IFD
// walk is bounded and cannot loop, and a preview must lie inside the file, be at most 4 MiB
// and begin with a JPEG's FF D8.

/// An image type tidesync makes thumbnails of.
public enum ImageKind: String, Sendable, CaseIterable {
    case jpeg, png, tiff

    /// By the file name's extension (case ignored): jpg jpeg jpe png tif tiff dng nef cr2 arw.
    public static func of(name: String) -> ImageKind? {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        switch name[name.index(after: dot)...].lowercased() {
        case "jpg", "jpeg", "jpe": return .jpeg
        case "png": return .png
        case "tif", "tiff", "dng", "nef", "cr2", "arw": return .tiff
        default: return nil
        }
    }

    /// By the first bytes.
    public static func sniff(_ prefix: [UInt8]) -> ImageKind? {
        if prefix.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if prefix.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if prefix.starts(with: [0x49, 0x49, 0x2A, 0x00]) || prefix.starts(with: [0x4D, 0x4D, 0x00, 0x2A]) { return .tiff }
        return nil
    }
}

/// What `EmbeddedThumbnail.locate` found.
public enum EmbeddedThumbnailSearch: Equatable, Sendable {
    /// An encoded JPEG at these bytes of the file.
    case found(offset: Int, length: Int)
    /// The structure is valid so far and goes on past the prefix: read the first `upTo` bytes.
    case needMore(upTo: Int)
    /// No preview (or a broken one).
    case none
}

public enum EmbeddedThumbnail {
    /// The largest preview taken.
    public static let maximumLength = 4 << 20
    /// How much further than the prefix `needMore` may ask for.
    public static let maximumReadAhead = 1 << 20

    /// Looks for a preview in `prefix`, the first bytes of a file of `fileSize` bytes.
    public static func locate(in prefix: [UInt8], fileSize: Int) -> EmbeddedThumbnailSearch {
        switch ImageKind.sniff(prefix) {
        case .jpeg: return exifInJPEG(prefix, fileSize: fileSize)
        case .tiff: return TIFFReader(bytes: prefix, base: 0, fileSize: fileSize).preview()
        default: return .none
        }
    }

    /// Walks the JPEG's markers up to its image data, looking for APP1 "Exif\0\0".
    static func exifInJPEG(_ bytes: [UInt8], fileSize: Int) -> EmbeddedThumbnailSearch {
        var at = 2
        while true {
            guard at + 4 <= bytes.count else { return more(at + 4, prefix: bytes.count, fileSize: fileSize) }
            guard bytes[at] == 0xFF else { return .none }
            let marker = bytes[at + 1]
            if marker == 0xFF { at += 1; continue }  // fill bytes
            if marker == 0xD9 || marker == 0xDA { return .none }  // end, or the image data: no EXIF before it
            let length = Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            guard length >= 2 else { return .none }
            if marker == 0xE1, at + 10 <= bytes.count, Array(bytes[(at + 4)..<(at + 10)]) == Array("Exif\0\0".utf8) {
                let base = at + 10
                return TIFFReader(bytes: bytes, base: base, fileSize: fileSize, end: min(fileSize, at + 2 + length)).thumbnail()
            }
            at += 2 + length
        }
    }

    static func more(_ end: Int, prefix: Int, fileSize: Int) -> EmbeddedThumbnailSearch {
        guard end <= fileSize, end > prefix, end - prefix <= maximumReadAhead else { return .none }
        return .needMore(upTo: end)
    }
}

/// A TIFF structure at `base` of `bytes` (the file's first bytes): its offsets count from
/// `base`; `end` is where the structure ends in the file (an APP1 segment's end).
struct TIFFReader {
    let bytes: [UInt8]
    let base: Int
    let fileSize: Int
    var end: Int
    let littleEndian: Bool
    let valid: Bool

    init(bytes: [UInt8], base: Int, fileSize: Int, end: Int? = nil) {
        self.bytes = bytes
        self.base = base
        self.fileSize = fileSize
        self.end = end ?? fileSize
        let order = base + 2 <= bytes.count ? (bytes[base], bytes[base + 1]) : (0, 0)
        littleEndian = order == (0x49, 0x49)
        valid = order == (0x49, 0x49) || order == (0x4D, 0x4D)
    }

    /// A 16- or 32-bit value at `offset` from the base; nil when outside the prefix.
    func value(_ offset: Int, _ size: Int) -> Int? {
        guard offset >= 0, offset <= Int.max - base - size, base + offset + size <= bytes.count else { return nil }
        var result = 0
        for index in 0..<size {
            let byte = Int(bytes[base + offset + (littleEndian ? size - 1 - index : index)])
            result = result << 8 | byte
        }
        return result
    }

    /// The bytes needed to read `count` bytes at `offset` from the base, as a search result.
    func needing(_ offset: Int, _ count: Int) -> EmbeddedThumbnailSearch {
        guard offset >= 0, count >= 0, offset <= Int.max - base - count else { return .none }
        return EmbeddedThumbnail.more(base + offset + count, prefix: bytes.count, fileSize: min(fileSize, end))
    }

    /// One IFD: its entries by tag (value or offset field, and count), and the next IFD's offset.
    struct Directory {
        var tags: [Int: (type: Int, count: Int, field: Int)] = [:]
        var next = 0
    }

    /// The IFD at `offset`, or the search result that stops the walk.
    func directory(at offset: Int) -> Result<Directory, Stop> {
        guard let count = value(offset, 2) else { return .failure(Stop(needing(offset, 2))) }
        guard count <= 1000 else { return .failure(Stop(.none)) }
        guard value(offset + 2 + count * 12, 4) != nil else { return .failure(Stop(needing(offset, 2 + count * 12 + 4))) }
        var directory = Directory()
        for index in 0..<count {
            let entry = offset + 2 + index * 12
            guard let tag = value(entry, 2), let type = value(entry + 2, 2), let items = value(entry + 4, 4) else { return .failure(Stop(.none)) }
            let field = type == 3 && items == 1 ? value(entry + 8, 2) : value(entry + 8, 4)
            directory.tags[tag] = (type, items, field ?? 0)
        }
        directory.next = value(offset + 2 + count * 12, 4) ?? 0
        return .success(directory)
    }

    struct Stop: Error {
        let result: EmbeddedThumbnailSearch
        init(_ result: EmbeddedThumbnailSearch) { self.result = result }
    }

    /// A JPEG's EXIF: IFD1's JPEGInterchangeFormat (0x0201) and its length (0x0202).
    func thumbnail() -> EmbeddedThumbnailSearch {
        guard valid, let first = value(4, 4) else { return .none }
        switch directory(at: first) {
        case .failure(let stop): return stop.result
        case .success(let zero):
            guard zero.next > 0, zero.next != first else { return .none }
            switch directory(at: zero.next) {
            case .failure(let stop): return stop.result
            case .success(let one): return jpeg(in: one)
            }
        }
    }

    /// A raw file's previews: every IFD of the chain and their SubIFDs (0x014A), at most 16;
    /// the largest JPEG preview of at most the maximum length.
    func preview() -> EmbeddedThumbnailSearch {
        guard valid, let first = value(4, 4) else { return .none }
        var queue = [first], seen: Set<Int> = [], best: (offset: Int, length: Int)?
        while let offset = queue.first, seen.count < 16 {
            queue.removeFirst()
            guard offset > 0, seen.insert(offset).inserted else { continue }
            switch directory(at: offset) {
            case .failure(let stop):
                if case .needMore = stop.result, best == nil { return stop.result }
                continue
            case .success(let directory):
                if case .found(let at, let length) = jpeg(in: directory), length > best?.length ?? 0 { best = (at, length) }
                if directory.next > 0 { queue.append(directory.next) }
                if let sub = directory.tags[0x014A] { queue += subDirectories(sub) }
            }
        }
        return best.map { .found(offset: $0.offset, length: $0.length) } ?? .none
    }

    /// The SubIFD offsets a 0x014A entry names (inline when one, else an array of LONGs).
    func subDirectories(_ entry: (type: Int, count: Int, field: Int)) -> [Int] {
        guard entry.count >= 1, entry.count <= 8 else { return [] }
        if entry.count == 1 { return [entry.field] }
        return (0..<entry.count).compactMap { value(entry.field + $0 * 4, 4) }
    }

    /// The JPEG a directory points at: 0x0201/0x0202, or a strip of an old-style JPEG
    /// (Compression 6 or 7 with one StripOffsets/StripByteCounts).
    func jpeg(in directory: Directory) -> EmbeddedThumbnailSearch {
        var place = directory.tags[0x0201].flatMap { start in directory.tags[0x0202].map { (start.field, $0.field) } }
        if place == nil, let compression = directory.tags[0x0103]?.field, compression == 6 || compression == 7,
           let strip = directory.tags[0x0111], strip.count == 1, let length = directory.tags[0x0117], length.count == 1 {
            place = (strip.field, length.field)
        }
        guard let (offset, length) = place, length >= 4, length <= EmbeddedThumbnail.maximumLength,
              offset >= 0, offset <= Int.max - base - length, base + offset + length <= min(fileSize, end) else { return .none }
        guard base + offset + 2 <= bytes.count else { return needing(offset, 2) }
        guard bytes[base + offset] == 0xFF, bytes[base + offset + 1] == 0xD8 else { return .none }
        return .found(offset: base + offset, length: length)
    }
}
