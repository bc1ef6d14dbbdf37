// TIFF structures written by hand for the shapes exiftool does not make: raws with previews
// in SubIFDs, and hostile EXIF blocks.

/// Builds TIFF and EXIF bytes.
enum TIFFBuilder {
    /// One IFD entry: tag, type (3 SHORT, 4 LONG), count and the 4-byte value field.
    struct Entry {
        let tag: Int, type: Int, count: Int, value: Int
    }

    static func number(_ value: Int, _ width: Int, bigEndian: Bool) -> [UInt8] {
        let little = (0..<width).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
        return bigEndian ? little.reversed() : little
    }

    static func header(bigEndian: Bool, firstIFD: Int) -> [UInt8] {
        (bigEndian ? [0x4D, 0x4D, 0x00, 0x2A] : [0x49, 0x49, 0x2A, 0x00]) + number(firstIFD, 4, bigEndian: bigEndian)
    }

    /// An IFD's bytes: 2 + 12 per entry + 4.
    static func directory(_ entries: [Entry], next: Int, bigEndian: Bool) -> [UInt8] {
        var bytes = number(entries.count, 2, bigEndian: bigEndian)
        for entry in entries {
            bytes += number(entry.tag, 2, bigEndian: bigEndian) + number(entry.type, 2, bigEndian: bigEndian)
            bytes += number(entry.count, 4, bigEndian: bigEndian)
            bytes += entry.type == 3 && entry.count == 1
                ? number(entry.value, 2, bigEndian: bigEndian) + [0, 0] : number(entry.value, 4, bigEndian: bigEndian)
        }
        return bytes + number(next, 4, bigEndian: bigEndian)
    }

    /// A DNG-like raw: IFD0 (the main image) with SubIFDs, each a reduced-resolution JPEG
    /// preview (NewSubfileType 1, Compression 7, one strip), the JPEGs from offset 1024 on.
    static func raw(previews: [(jpeg: [UInt8], width: Int, height: Int)], bigEndian: Bool) -> [UInt8] {
        let subdirectorySize = 2 + 6 * 12 + 4, arrayAt = 8 + 2 + 4 * 12 + 4
        let firstSubdirectory = arrayAt + 4 * previews.count
        var data: [UInt8] = [], dataOffsets: [Int] = []
        for preview in previews {
            dataOffsets.append(1024 + data.count)
            data += preview.jpeg
        }
        var bytes = header(bigEndian: bigEndian, firstIFD: 8)
        bytes += directory([Entry(tag: 0xFE, type: 4, count: 1, value: 0), Entry(tag: 0x100, type: 4, count: 1, value: 6000),
                            Entry(tag: 0x101, type: 4, count: 1, value: 4000),
                            Entry(tag: 0x14A, type: 4, count: previews.count, value: previews.count == 1 ? firstSubdirectory : arrayAt)],
                           next: 0, bigEndian: bigEndian)
        for index in previews.indices { bytes += number(firstSubdirectory + index * subdirectorySize, 4, bigEndian: bigEndian) }
        for (index, preview) in previews.enumerated() {
            bytes += directory([Entry(tag: 0xFE, type: 4, count: 1, value: 1), Entry(tag: 0x100, type: 3, count: 1, value: preview.width),
                                Entry(tag: 0x101, type: 3, count: 1, value: preview.height), Entry(tag: 0x103, type: 3, count: 1, value: 7),
                                Entry(tag: 0x111, type: 4, count: 1, value: dataOffsets[index]),
                                Entry(tag: 0x117, type: 4, count: 1, value: preview.jpeg.count)],
                               next: 0, bigEndian: bigEndian)
        }
        return bytes + [UInt8](repeating: 0, count: 1024 - bytes.count) + data
    }

    /// A JPEG whose EXIF IFD1 says the thumbnail is `thumbnailLength` bytes at
    /// `thumbnailOffset` (from the TIFF header); `payload` follows the IFDs.
    static func exifJPEG(thumbnailOffset: Int, thumbnailLength: Int, payload: [UInt8]) -> [UInt8] {
        var tiff = header(bigEndian: false, firstIFD: 8)
        tiff += directory([Entry(tag: 0x112, type: 3, count: 1, value: 1)], next: 8 + 18, bigEndian: false)
        tiff += directory([Entry(tag: 0x201, type: 4, count: 1, value: thumbnailOffset),
                           Entry(tag: 0x202, type: 4, count: 1, value: thumbnailLength)], next: 0, bigEndian: false)
        tiff += payload
        let segment = Array("Exif".utf8) + [0, 0] + tiff
        return [0xFF, 0xD8, 0xFF, 0xE1] + number(segment.count + 2, 2, bigEndian: true) + segment + [0xFF, 0xD9]
    }

    /// A TIFF whose IFD0 is its own next IFD and its own SubIFD.
    static func selfLoop() -> [UInt8] {
        header(bigEndian: false, firstIFD: 8)
            + directory([Entry(tag: 0x14A, type: 4, count: 1, value: 8)], next: 8, bigEndian: false)
            + [UInt8](repeating: 0, count: 64)
    }
}
