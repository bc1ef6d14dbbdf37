import Foundation
import TestSupport
import Testing
@testable import Thumbnails

/// Red, green, blue and white quadrants (top left, top right, bottom left, bottom right): no
/// turn or mirror of it looks like another.
func quadrants(width: Int, height: Int) -> (Int, Int) -> [UInt8] {
    { x, y in
        switch (x < width / 2, y < height / 2) {
        case (true, true): [255, 0, 0]
        case (false, true): [0, 255, 0]
        case (true, false): [0, 0, 255]
        case (false, false): [255, 255, 255]
        }
    }
}

/// The quadrant colours of `image` as "RGBW" (top left, top right, bottom left, bottom
/// right), read at each quadrant's centre; "?" for a colour that is none of them.
func quadrantColours(of image: DecodedImage) -> String {
    let centres = [(1, 1), (3, 1), (1, 3), (3, 3)].map { (image.width * $0.0 / 4, image.height * $0.1 / 4) }
    return String(centres.map { x, y -> Character in
        let at = (y * image.width + x) * image.channels
        return switch image.pixels[at..<at + 3].map({ $0 > 128 }) {
        case [true, false, false]: "R"
        case [false, true, false]: "G"
        case [false, false, true]: "B"
        case [true, true, true]: "W"
        default: "?"
        }
    })
}

@Suite("EXIF orientation")
struct OrientationTests {
    @Test("the Orientation exiftool writes into a JPEG's Exif segment is read", arguments: 1...8)
    func fromExiftool(value: Int) throws {
        let folder = try ImageFolder()
        let photo = try folder.jpeg("photo.jpg", width: 64, height: 32)
        try ImageFolder.run("exiftool", ["-q", "-n", "-Orientation=\(value)", "-overwrite_original", photo])
        let file = try ImageFolder.bytes(photo)
        #expect(EmbeddedThumbnail.orientation(in: Array(file.prefix(65536))) == ExifOrientation(rawValue: value))
    }

    @Test("a TIFF's IFD0 Orientation is read, in either byte order", arguments: [false, true])
    func fromTIFF(bigEndian: Bool) {
        let file = TIFFBuilder.header(bigEndian: bigEndian, firstIFD: 8)
            + TIFFBuilder.directory([.init(tag: 0x100, type: 4, count: 1, value: 6000), .init(tag: 0x112, type: 3, count: 1, value: 8)],
                                    next: 0, bigEndian: bigEndian)
        #expect(EmbeddedThumbnail.orientation(in: file) == .left)
    }

    @Test("no EXIF, no tag, a value out of range, a prefix cut short or hostile bytes read as upright")
    func upright() throws {
        let folder = try ImageFolder()
        let plain = try ImageFolder.bytes(try folder.jpeg("plain.jpg", width: 64, height: 32))
        let turned = try folder.jpeg("turned.jpg", width: 64, height: 32)
        try ImageFolder.run("exiftool", ["-q", "-n", "-Orientation=6", "-overwrite_original", turned])
        let turnedBytes = try ImageFolder.bytes(turned)
        func tiff(_ entries: [TIFFBuilder.Entry]) -> [UInt8] {
            TIFFBuilder.header(bigEndian: false, firstIFD: 8) + TIFFBuilder.directory(entries, next: 0, bigEndian: false)
        }
        var cases: [[UInt8]] = [plain, Array(turnedBytes.prefix(30)), TIFFBuilder.selfLoop(), [], Array("II*".utf8),
                                tiff([.init(tag: 0x100, type: 4, count: 1, value: 640)]),
                                TIFFBuilder.header(bigEndian: true, firstIFD: 0x7FFF_FFF0) + [UInt8](repeating: 0, count: 32),
                                TIFFBuilder.header(bigEndian: false, firstIFD: 8) + [0xFF, 0xFF] + [UInt8](repeating: 0, count: 40)]
        cases += [0, 9, 0xFFFF].map { tiff([.init(tag: 0x112, type: 3, count: 1, value: $0)]) }
        cases.append(tiff([.init(tag: 0x112, type: 3, count: 2, value: 6)]))
        cases.append(tiff([.init(tag: 0x112, type: 2, count: 1, value: 6)]))
        for (index, bytes) in cases.enumerated() {
            #expect(EmbeddedThumbnail.orientation(in: bytes) == .up, "case \(index)")
        }
    }

    @Test("seeded mutations of an oriented JPEG give some orientation, never a crash")
    func mutations() throws {
        let folder = try ImageFolder()
        let photo = try folder.jpeg("photo.jpg", width: 64, height: 32)
        try ImageFolder.run("exiftool", ["-q", "-n", "-Orientation=6", "-overwrite_original", photo])
        let seed = Array(try ImageFolder.bytes(photo).prefix(512))
        var random = SeededRandom(seed: 23)
        for _ in 0..<3000 {
            var bytes = seed
            for _ in 0..<1 + random.next(6) { bytes[random.next(bytes.count)] = UInt8(truncatingIfNeeded: random.next()) }
            _ = EmbeddedThumbnail.orientation(in: Array(bytes.prefix(random.next(bytes.count + 1))))
        }
    }

    @Test("the embedded thumbnail is rendered upright: each quadrant lands where the photo's Orientation says",
          arguments: zip(1...8, ["RGBW", "GRWB", "WBGR", "BWRG", "RBGW", "BRWG", "WGBR", "GWRB"]))
    func renderedUpright(value: Int, expected: String) throws {
        let folder = try ImageFolder()
        let photo = try folder.jpeg("photo.jpg", width: 640, height: 320, pattern: quadrants(width: 640, height: 320))
        try folder.embed(thumbnail: try folder.jpeg("thumb.jpg", width: 160, height: 80, pattern: quadrants(width: 160, height: 80)),
                         in: photo)
        try ImageFolder.run("exiftool", ["-q", "-n", "-Orientation=\(value)", "-overwrite_original", photo])
        let file = try ImageFolder.bytes(photo), prefix = Array(file.prefix(65536))
        guard case .found(let offset, let length) = EmbeddedThumbnail.locate(in: prefix, fileSize: file.count, longSide: 128) else {
            Issue.record("no embedded thumbnail")
            return
        }
        let made = try ThumbnailRenderer.cachePNGs(from: Array(file[offset..<offset + length]), sizes: [.normal, .large],
                                                   uri: "file:///p.jpg", mtime: 1, fileSize: Int64(file.count), mimeType: nil,
                                                   orientation: EmbeddedThumbnail.orientation(in: prefix))
        let upright = value >= 5 ? [[64, 128], [80, 160]] : [[128, 64], [160, 80]]
        for ((size, png), sides) in zip(made, upright) {
            let image = try ThumbnailRenderer.decode(png, fitting: 0)
            #expect([image.width, image.height] == sides, "\(size)")
            #expect(quadrantColours(of: image) == expected, "\(size)")
        }
    }
}
