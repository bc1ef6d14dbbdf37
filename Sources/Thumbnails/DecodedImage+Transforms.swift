// Turning and shrinking decoded pixels, so one decode serves every orientation and size.
import CThumbnailCodecs

extension DecodedImage {
    /// This image turned and mirrored to stand upright as `orientation` says. For the
    /// orientations that swap the sides, the width and height swap, and so do the source's.
    public func oriented(_ orientation: ExifOrientation) -> DecodedImage {
        guard orientation != .up else { return self }
        let (column, row) = orientation.upright(width: width, height: height)
        let uprightWidth = orientation.swapsSides ? height : width
        var turned = [UInt8](repeating: 0, count: pixels.count)
        turned.withUnsafeMutableBufferPointer { target in
            pixels.withUnsafeBufferPointer { source in
                for y in 0..<height {
                    for x in 0..<width {
                        let uprightX = column.x * x + column.y * y + column.offset
                        let uprightY = row.x * x + row.y * y + row.offset
                        let from = (y * width + x) * channels, to = (uprightY * uprightWidth + uprightX) * channels
                        for channel in 0..<channels { target[to + channel] = source[from + channel] }
                    }
                }
            }
        }
        let swaps = orientation.swapsSides
        return DecodedImage(width: uprightWidth, height: swaps ? width : height, channels: channels, pixels: turned,
                            sourceWidth: swaps ? sourceHeight : sourceWidth, sourceHeight: swaps ? sourceWidth : sourceHeight)
    }

    /// This image shrunk by area averaging to the size a decode fitting `longSide` would give
    /// (figured from the source's size, so the rounding is the same), never larger than it is.
    public func shrunk(fitting longSide: Int) throws(ThumbnailError) -> DecodedImage {
        var fitWidth: UInt32 = 0, fitHeight: UInt32 = 0
        tsc_fit(UInt32(clamping: sourceWidth), UInt32(clamping: sourceHeight), UInt32(clamping: max(0, longSide)),
                &fitWidth, &fitHeight)
        let targetWidth = min(width, Int(fitWidth)), targetHeight = min(height, Int(fitHeight))
        guard targetWidth != width || targetHeight != height else { return self }
        var image = tsc_image()
        let status = pixels.withUnsafeBufferPointer { source in
            tsc_shrink(source.baseAddress, UInt32(width), UInt32(height), UInt32(channels),
                       UInt32(targetWidth), UInt32(targetHeight), &image)
        }
        defer { tsc_free(image.pixels) }
        guard status == Int32(TSC_OK.rawValue), let shrunk = image.pixels else { throw .outOfMemory }
        let count = Int(image.width) * Int(image.height) * Int(image.channels)
        return DecodedImage(width: Int(image.width), height: Int(image.height), channels: channels,
                            pixels: Array(UnsafeBufferPointer(start: shrunk, count: count)),
                            sourceWidth: sourceWidth, sourceHeight: sourceHeight)
    }
}
