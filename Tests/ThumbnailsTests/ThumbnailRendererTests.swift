import Foundation
import TestSupport
import Testing
import Thumbnails

/// The width, height and channels python3's zlib reads from a PNG, checking every CRC and
/// that the image data inflates to exactly the rows the header announces.
func independentlyDecoded(_ png: [UInt8], in folder: ImageFolder) throws -> [Int] {
    let file = "\(folder.path)/check-\(UUID().uuidString).png"
    try Data(png).write(to: URL(fileURLWithPath: file))
    let script = """
    import struct, zlib, sys
    d = open(sys.argv[1], 'rb').read()
    assert d[:8] == b'\\x89PNG\\r\\n\\x1a\\n'
    p, idat, ihdr = 8, b'', None
    while p < len(d):
        n, = struct.unpack('>I', d[p:p+4]); kind = d[p+4:p+8]; body = d[p+8:p+8+n]
        assert struct.unpack('>I', d[p+8+n:p+12+n])[0] == zlib.crc32(kind + body) & 0xffffffff
        if kind == b'IHDR': ihdr = struct.unpack('>IIBBBBB', body)
        if kind == b'IDAT': idat += body
        p += 12 + n
    w, h, depth, color = ihdr[:4]
    c = {2: 3, 6: 4}[color]
    assert depth == 8 and len(zlib.decompress(idat)) == h * (1 + w * c)
    print(w, h, c)
    """
    let output = try ImageFolder.run("python3", ["-c", script, file])
    return String(decoding: output, as: UTF8.self).split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
}

@Suite("Rendering cache thumbnails")
struct ThumbnailRendererTests {
    @Test("a JPEG and PNGs are scaled to fit each size, aspect kept, never enlarged, tEXt keys in",
          arguments: ThumbnailSize.allCases)
    func fits(size: ThumbnailSize) throws {
        let folder = try ImageFolder()
        let sources = [(try folder.jpeg("photo.jpg", width: 900, height: 600), 900, 600, 3),
                       (try folder.png("rgba.png", width: 700, height: 350, channels: 4), 700, 350, 4),
                       (try folder.png("gray.png", width: 300, height: 400, channels: 1), 300, 400, 3)]
        for (path, width, height, channels) in sources {
            let png = try ThumbnailRenderer.cachePNG(from: try ImageFolder.bytes(path), size: size, uri: "file:///p/x.jpg",
                                                     mtime: 1_700_000_000, fileSize: 1234, mimeType: "image/jpeg")
            let scale = min(1.0, Double(size.pixels) / Double(max(width, height)))
            let expected = [Int((Double(width) * scale).rounded()), Int((Double(height) * scale).rounded())]
            #expect(try independentlyDecoded(png, in: folder) == expected + [channels], "\(path) at \(size)")
            let decoded = try ThumbnailRenderer.decode(png, fitting: 0)
            #expect([decoded.width, decoded.height] == expected)
            let text = Dictionary(PNGText.entries(in: png)?.map { ($0.key, String(decoding: $0.value, as: UTF8.self)) } ?? [],
                                  uniquingKeysWith: { first, _ in first })
            #expect(text["Thumb::URI"] == "file:///p/x.jpg" && text["Thumb::MTime"] == "1700000000")
            #expect(text["Thumb::Size"] == "1234" && text["Thumb::Mimetype"] == "image/jpeg")
        }
    }

    @Test("one decode gives every size asked for, in that order, each as cachePNG alone would fit it")
    func manySizes() throws {
        let folder = try ImageFolder()
        let sources = [(try folder.jpeg("photo.jpg", width: 1800, height: 1200), 1800, 1200),
                       (try folder.png("rgba.png", width: 700, height: 350, channels: 4), 700, 350)]
        let sizes: [ThumbnailSize] = [.normal, .xxLarge, .large, .xLarge]
        for (path, width, height) in sources {
            let bytes = try ImageFolder.bytes(path)
            let made = try ThumbnailRenderer.cachePNGs(from: bytes, sizes: sizes, uri: "file:///p/x", mtime: 7, fileSize: 9,
                                                       mimeType: nil, orientation: .up)
            #expect(made.map(\.size) == sizes)
            for (size, png) in made {
                let scale = min(1.0, Double(size.pixels) / Double(max(width, height)))
                let expected = [Int((Double(width) * scale).rounded()), Int((Double(height) * scale).rounded())]
                #expect(Array(try independentlyDecoded(png, in: folder).prefix(2)) == expected, "\(path) at \(size)")
                #expect(PNGText.entries(in: png)?.first?.key == "Thumb::URI")
                // Shrunk from the largest decode, the pixels are those of a decode at this size
                // but for rounding.
                let alone = try ThumbnailRenderer.decode(try ThumbnailRenderer.cachePNG(from: bytes, size: size, uri: "u", mtime: 7,
                                                                                       fileSize: 9, mimeType: nil), fitting: 0)
                let shrunk = try ThumbnailRenderer.decode(png, fitting: 0)
                let difference = zip(alone.pixels, shrunk.pixels).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
                #expect(alone.pixels.count == shrunk.pixels.count && difference / max(1, alone.pixels.count) < 4, "\(path) at \(size)")
            }
        }
        #expect(try ThumbnailRenderer.cachePNGs(from: [], sizes: [], uri: "u", mtime: 0, fileSize: 0, mimeType: nil, orientation: .up).isEmpty)
    }

    @Test("the shrunk pixels are the source's colours, not noise")
    func pixelsAreAveraged() throws {
        let folder = try ImageFolder()
        let image = try ThumbnailRenderer.decode(try ImageFolder.bytes(try folder.png("g.png", width: 400, height: 200, channels: 3)),
                                                 fitting: 100)
        #expect(image.width == 100 && image.height == 50 && image.sourceWidth == 400)
        // Red runs 0→255 left to right, green top to bottom, blue is 200 everywhere.
        let first = Array(image.pixels[0..<3]), last = Array(image.pixels[image.pixels.count - 3..<image.pixels.count])
        #expect(first[0] < 8 && first[1] < 8 && first[2] == 200)
        #expect(last[0] > 247 && last[1] > 247 && last[2] == 200)
    }

    @Test("headers claiming giant images are refused before any pixel is allocated")
    func giants() throws {
        let folder = try ImageFolder()
        let png = try ImageFolder.bytes(try folder.png("huge.png", width: 100_000, height: 100_000, channels: 3, pixels: false))
        #expect(throws: ThumbnailError.tooLarge(width: 100_000, height: 100_000)) {
            try ThumbnailRenderer.decode(png, fitting: 256)
        }
        var jpeg = try ImageFolder.bytes(try folder.jpeg("small.jpg", width: 40, height: 30))
        let frame = try #require((0..<jpeg.count - 9).first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xC0 })
        jpeg.replaceSubrange(frame + 5..<frame + 9, with: [0xFD, 0xE8, 0xFD, 0xE8])
        #expect(throws: ThumbnailError.tooLarge(width: 65000, height: 65000)) {
            try ThumbnailRenderer.decode(jpeg, fitting: 256)
        }
    }

    @Test("a truncated JPEG or PNG, and bytes that are no image, give no thumbnail")
    func damaged() throws {
        let folder = try ImageFolder()
        let jpeg = try ImageFolder.bytes(try folder.jpeg("photo.jpg", width: 300, height: 200))
        let png = try ImageFolder.bytes(try folder.png("p.png", width: 300, height: 200, channels: 3))
        var random = SeededRandom(seed: 5)
        let noise = [0xFF, 0xD8, 0xFF] + (0..<2000).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        for bytes in [Array(jpeg.prefix(jpeg.count / 2)), Array(jpeg.prefix(300)), Array(png.prefix(png.count - 30)),
                      Array(png.prefix(40)), noise, Array("hello".utf8), []] {
            #expect(throws: ThumbnailError.self) { try ThumbnailRenderer.decode(bytes, fitting: 128) }
        }
    }

    @Test("seeded mutations of a JPEG and a PNG decode or throw, never crash")
    func mutations() throws {
        let folder = try ImageFolder()
        let seeds = [try ImageFolder.bytes(try folder.jpeg("photo.jpg", width: 120, height: 80)),
                     try ImageFolder.bytes(try folder.png("p.png", width: 120, height: 80, channels: 4))]
        var random = SeededRandom(seed: 99)
        for round in 0..<600 {
            var bytes = seeds[round % 2]
            for _ in 0..<1 + random.next(6) { bytes[random.next(bytes.count)] = UInt8(truncatingIfNeeded: random.next()) }
            if let image = try? ThumbnailRenderer.decode(bytes, fitting: 64) {
                #expect(image.pixels.count == image.width * image.height * image.channels && max(image.width, image.height) <= 64)
            }
        }
    }
}
