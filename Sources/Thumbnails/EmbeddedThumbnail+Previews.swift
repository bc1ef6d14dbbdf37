// The previews in a TIFF structure: every IFD of the chain and its SubIFDs is looked at once.

/// A JPEG preview found in an IFD: where it lies and, when the IFD says, its long side.
struct Preview: Equatable {
    let offset: Int
    let length: Int
    let longSide: Int?
}

extension EmbeddedThumbnail {
    /// Walks the IFD chain from IFD0 and the SubIFDs (tag 0x014A), breadth first, appending
    /// each valid preview in the order found. An IFD met twice is skipped; more than
    /// `maximumSteps` IFDs is `.invalid`.
    static func collect(_ tiff: TIFFStructure, into found: inout [Preview]) throws(ParseStop) {
        var queue = [tiff.firstIFD], visited = Set<Int>()
        while !queue.isEmpty {
            let offset = queue.removeFirst()
            guard visited.insert(offset).inserted else { continue }
            guard visited.count <= maximumSteps else { throw .invalid }
            let (entries, next) = try tiff.directory(at: offset)
            let tags = Dictionary(entries.map { ($0.tag, $0) }, uniquingKeysWith: { first, _ in first })
            if let preview = try preview(in: tags, of: tiff) { found.append(preview) }
            if let subdirectories = tags[0x014A] {
                for subdirectory in try values(of: subdirectories, in: tiff) {
                    queue.append(try TIFFStructure.absolute(tiff.base, subdirectory))
                }
            }
            if let next { queue.append(next) }
        }
    }

    /// The preview an IFD describes: JPEGInterchangeFormat (0x0201) and its length (0x0202),
    /// or a reduced-resolution image (NewSubfileType 1) compressed as JPEG (6 or 7) in one
    /// strip. It must lie in the file, be shorter than `maximumLength` and, when its first
    /// bytes are at hand, start with FF D8.
    static func preview(in tags: [Int: IFDEntry], of tiff: TIFFStructure) throws(ParseStop) -> Preview? {
        func value(_ tag: Int) throws(ParseStop) -> Int? {
            guard let entry = tags[tag], entry.count == 1 else { return nil }
            return try values(of: entry, in: tiff).first
        }
        var start: Int?, length: Int?
        if let offset = try value(0x0201), let count = try value(0x0202) {
            (start, length) = (offset, count)
        } else if try value(0x00FE) == 1, let compression = try value(0x0103), compression == 6 || compression == 7 {
            (start, length) = try (value(0x0111), value(0x0117))
        }
        guard let start, let length else { return nil }
        let offset = try TIFFStructure.absolute(tiff.base, start)
        guard length > 0, length < maximumLength, tiff.window.inFile(offset, length) else { return nil }
        if offset + 2 <= tiff.window.bytes.count, !tiff.window.matches(offset, [0xFF, 0xD8]) { return nil }
        let side = try max(value(0x0100) ?? 0, value(0x0101) ?? 0)
        return Preview(offset: offset, length: length, longSide: side > 0 ? side : nil)
    }

    /// An entry's values, or none when its type or count is not one a preview uses.
    static func values(of entry: IFDEntry, in tiff: TIFFStructure) throws(ParseStop) -> [Int] {
        do {
            return try tiff.values(of: entry)
        } catch .invalid {
            return []
        } catch {
            throw error
        }
    }

    /// The smallest preview known to be at least `longSide`, else the largest of known size,
    /// else the first.
    static func choose(among found: [Preview], longSide: Int) -> Preview? {
        let sized = found.compactMap { preview in preview.longSide.map { (preview, $0) } }
        if let enough = sized.filter({ $0.1 >= longSide }).min(by: { $0.1 < $1.1 }) { return enough.0 }
        if let largest = sized.max(by: { $0.1 < $1.1 }) { return largest.0 }
        return found.first
    }
}
