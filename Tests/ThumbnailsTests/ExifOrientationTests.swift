import Foundation
import Testing
import TestSupport
@testable import Thumbnails

/// EXIF orientation: read from the first bytes as exiftool writes it, and applied to pixels
/// so a portrait photo's thumbnail stands upright.
@Suite("EXIF orientation")
struct ExifOrientationTests {
    @Test("the orientation exiftool writes (1 to 8) is read from a JPEG's first bytes; none, or broken bytes, read as upright")
    func read() throws {
        let folder = try ImageFolder()
        let image = try folder.jpeg("turned.jpg", width: 64, height: 32)
        #expect(EmbeddedThumbnail.orientation(in: try ImageFolder.bytes(image)) == .up)
        for value in 1...8 {
            try ImageFolder.run("exiftool", ["-q", "-n", "-overwrite_original", "-Orientation=\(value)", image])
            let bytes = try ImageFolder.bytes(image)
            #expect(EmbeddedThumbnail.orientation(in: Array(bytes.prefix(64 << 10))).rawValue == value, "Orientation=\(value)")
            // Cut inside the EXIF segment: not known, so upright.
            #expect(EmbeddedThumbnail.orientation(in: Array(bytes.prefix(24))) == .up)
        }
        var random = SeededRandom(seed: 17)
        let valid = try ImageFolder.bytes(image)
        for _ in 0..<500 {
            var mutated = valid
            for _ in 0..<4 { mutated[Int(random.next() % UInt64(min(mutated.count, 256)))] = UInt8(truncatingIfNeeded: random.next()) }
            _ = EmbeddedThumbnail.orientation(in: mutated)  // never traps
        }
    }

    @Test("each orientation puts the stored top-left pixel and its right neighbour where EXIF says", arguments: [
        (ExifOrientation.up, 4, 2, (0, 0), (1, 0)),
        (.upMirrored, 4, 2, (3, 0), (2, 0)),
        (.down, 4, 2, (3, 1), (2, 1)),
        (.downMirrored, 4, 2, (0, 1), (1, 1)),
        (.leftMirrored, 2, 4, (0, 0), (0, 1)),
        (.right, 2, 4, (1, 0), (1, 1)),
        (.rightMirrored, 2, 4, (1, 3), (1, 2)),
        (.left, 2, 4, (0, 3), (0, 2)),
    ])
    func pixels(orientation: ExifOrientation, width: Int, height: Int, first: (Int, Int), second: (Int, Int)) {
        // A 4 x 2 stored image whose pixel i has the value i in each of its three channels.
        let stored = DecodedImage(width: 4, height: 2, channels: 3, pixels: (0..<8).flatMap { [UInt8($0), UInt8($0), UInt8($0)] },
                                  sourceWidth: 4, sourceHeight: 2)
        let upright = stored.oriented(orientation)
        #expect(upright.width == width && upright.height == height && upright.pixels.count == 24)
        func value(_ at: (Int, Int)) -> UInt8 { upright.pixels[(at.1 * upright.width + at.0) * 3] }
        #expect(value(first) == 0 && value(second) == 1, "\(orientation): \(upright.pixels)")
    }

    @Test("a portrait photo's landscape EXIF thumbnail becomes a portrait thumbnail")
    func portraitThumbnail() throws {
        let folder = try ImageFolder()
        let image = try folder.jpeg("photo.jpg", width: 320, height: 240)
        try folder.embed(thumbnail: try folder.jpeg("small.jpg", width: 160, height: 120), in: image)
        try ImageFolder.run("exiftool", ["-q", "-n", "-overwrite_original", "-Orientation=6", image])
        let bytes = try ImageFolder.bytes(image)
        guard case .found(let offset, let length) = EmbeddedThumbnail.locate(in: bytes, fileSize: bytes.count) else {
            Issue.record("no EXIF thumbnail found")
            return
        }
        let png = try ThumbnailRenderer.cachePNG(from: Array(bytes[offset..<offset + length]), size: .normal, uri: "file:///photo.jpg",
                                                 mtime: 1, fileSize: Int64(bytes.count), mimeType: nil,
                                                 orientation: EmbeddedThumbnail.orientation(in: bytes))
        let decoded = try ThumbnailRenderer.decode(png, fitting: 0)
        #expect(decoded.width == 96 && decoded.height == 128, "\(decoded.width)x\(decoded.height)")
    }
}
