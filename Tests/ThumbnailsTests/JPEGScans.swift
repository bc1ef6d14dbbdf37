// Where a JPEG's scans lie, so tests can cut a file between scans or repeat one: a walk over
// its marker segments, skipping each scan's entropy-coded data.

/// One scan of a JPEG: from the first table segment before its SOS (FF DA) to the marker
/// that ends its entropy-coded data.
struct JPEGScan {
    let start: Int
    let end: Int
}

enum JPEGScans {
    /// The scans of a well-formed JPEG (as cjpeg writes them), in order.
    static func of(_ jpeg: [UInt8]) -> [JPEGScan] {
        var scans: [JPEGScan] = [], position = 2, tablesStart: Int?
        while position + 4 <= jpeg.count, jpeg[position] == 0xFF, jpeg[position + 1] != 0xD9 {
            let marker = jpeg[position + 1], length = Int(jpeg[position + 2]) << 8 | Int(jpeg[position + 3])
            var end = position + 2 + length
            if marker == 0xDA {
                end = endOfEntropyData(jpeg, from: end)
                scans.append(JPEGScan(start: tablesStart ?? position, end: end))
                tablesStart = nil
            } else if [0xC4, 0xCC, 0xDB, 0xDD].contains(marker) {
                tablesStart = tablesStart ?? position
            } else {
                tablesStart = nil
            }
            position = end
        }
        return scans
    }

    /// The offset of the first marker (FF, then neither 00 nor a restart marker) at or after
    /// `start`, or the end of the data.
    static func endOfEntropyData(_ jpeg: [UInt8], from start: Int) -> Int {
        var position = start
        while position + 1 < jpeg.count {
            if jpeg[position] == 0xFF, jpeg[position + 1] != 0, !(0xD0...0xD7).contains(jpeg[position + 1]) { return position }
            position += 1
        }
        return jpeg.count
    }
}
