// The TIFF structure that EXIF and the TIFF-based raw formats share: a header, then image
// file directories (IFDs) chained by "next" pointers, offsets counted from the header. Pure.

/// One 12-byte IFD entry.
struct IFDEntry {
    let tag: Int
    let type: Int
    let count: Int
    /// The absolute offset of the entry's 4-byte value-or-offset field.
    let field: Int
}

/// A TIFF header at `base` in a `ByteWindow`, and reads of its IFDs.
struct TIFFStructure {
    /// The most entries an IFD may have, and the most values an array is read with.
    static let maximumEntries = 1000
    static let maximumValues = 64

    let window: ByteWindow
    let base: Int
    let bigEndian: Bool
    /// The absolute offset of IFD0.
    let firstIFD: Int

    /// Reads the header at `base`: "II*\0" or "MM\0*" and the offset of IFD0.
    init(_ window: ByteWindow, base: Int) throws(ParseStop) {
        self.window = window
        self.base = base
        try window.require(base, 8)
        if window.matches(base, [0x49, 0x49, 0x2A, 0x00]) {
            bigEndian = false
        } else if window.matches(base, [0x4D, 0x4D, 0x00, 0x2A]) {
            bigEndian = true
        } else {
            throw .invalid
        }
        firstIFD = try Self.absolute(base, window.uint32(base + 4, bigEndian: bigEndian))
    }

    /// `base` + `offset`, or `.invalid` past any possible file.
    static func absolute(_ base: Int, _ offset: Int) throws(ParseStop) -> Int {
        let (sum, overflow) = base.addingReportingOverflow(offset)
        guard !overflow else { throw .invalid }
        return sum
    }

    /// The entries of the IFD at `offset` and the absolute offset of the next IFD (nil at
    /// the end of the chain).
    func directory(at offset: Int) throws(ParseStop) -> (entries: [IFDEntry], next: Int?) {
        let count = try window.uint16(offset, bigEndian: bigEndian)
        guard count > 0, count <= Self.maximumEntries else { throw .invalid }
        try window.require(offset + 2, count * 12 + 4)
        var entries: [IFDEntry] = []
        for index in 0..<count {
            let start = offset + 2 + index * 12
            entries.append(IFDEntry(tag: try window.uint16(start, bigEndian: bigEndian),
                                    type: try window.uint16(start + 2, bigEndian: bigEndian),
                                    count: try window.uint32(start + 4, bigEndian: bigEndian),
                                    field: start + 8))
        }
        let next = try window.uint32(offset + 2 + count * 12, bigEndian: bigEndian)
        return try (entries, next == 0 ? nil : Self.absolute(base, next))
    }

    /// The values of a SHORT (3), LONG (4) or IFD (13) entry; `.invalid` for another type or
    /// more than `maximumValues` values.
    func values(of entry: IFDEntry) throws(ParseStop) -> [Int] {
        let width: Int
        switch entry.type {
        case 3: width = 2
        case 4, 13: width = 4
        default: throw .invalid
        }
        guard entry.count >= 1, entry.count <= Self.maximumValues else { throw .invalid }
        let start = try entry.count * width <= 4
            ? entry.field : Self.absolute(base, window.uint32(entry.field, bigEndian: bigEndian))
        try window.require(start, entry.count * width)
        var values: [Int] = []
        for index in 0..<entry.count {
            let at = start + index * width
            values.append(try width == 2 ? window.uint16(at, bigEndian: bigEndian) : window.uint32(at, bigEndian: bigEndian))
        }
        return values
    }
}
