import Foundation
import TestSupport
import Testing
@testable import Thumbnails

@Suite("Embedded thumbnails")
struct EmbeddedThumbnailTests {
    @Test("the EXIF thumbnail exiftool embedded in a JPEG is found byte for byte")
    func exifThumbnail() throws {
        let folder = try ImageFolder()
        let big = try folder.jpeg("big.jpg", width: 800, height: 600)
        let small = try folder.jpeg("small.jpg", width: 160, height: 120)
        try folder.embed(thumbnail: small, in: big)
        let file = try ImageFolder.bytes(big), expected = try ImageFolder.exifThumbnail(of: big)
        #expect(expected.count > 100)
        let search = EmbeddedThumbnail.locate(in: Array(file.prefix(65536)), fileSize: file.count)
        guard case .found(let offset, let length) = search else {
            Issue.record("expected a thumbnail, got \(search)")
            return
        }
        #expect(Array(file[offset..<offset + length]) == expected)
    }

    @Test("a JPEG without EXIF has no embedded thumbnail")
    func noExif() throws {
        let folder = try ImageFolder()
        let file = try ImageFolder.bytes(try folder.jpeg("plain.jpg", width: 64, height: 48))
        #expect(EmbeddedThumbnail.locate(in: file, fileSize: file.count) == .none)
    }

    @Test("a prefix that stops inside the EXIF structure asks for more, and more finds it")
    func needMore() throws {
        let folder = try ImageFolder()
        let big = try folder.jpeg("big.jpg", width: 800, height: 600)
        try folder.embed(thumbnail: try folder.jpeg("small.jpg", width: 160, height: 120), in: big)
        let file = try ImageFolder.bytes(big)
        for cut in [4, 20, 40] {
            let search = EmbeddedThumbnail.locate(in: Array(file.prefix(cut)), fileSize: file.count)
            guard case .needMore(let upTo) = search else {
                Issue.record("cut at \(cut): expected needMore, got \(search)")
                continue
            }
            #expect(upTo > cut && upTo <= file.count)
            #expect(EmbeddedThumbnail.locate(in: Array(file.prefix(upTo)), fileSize: file.count) != .none)
        }
    }

    @Test("a raw's previews in SubIFDs: the smallest one large enough is taken", arguments: [false, true])
    func rawPreviews(bigEndian: Bool) throws {
        let folder = try ImageFolder()
        let small = try ImageFolder.bytes(try folder.jpeg("s.jpg", width: 160, height: 120))
        let large = try ImageFolder.bytes(try folder.jpeg("l.jpg", width: 1024, height: 768))
        let raw = TIFFBuilder.raw(previews: [(small, 160, 120), (large, 1024, 768)], bigEndian: bigEndian)
        let smallAt = raw.firstRange(of: small)!.lowerBound, largeAt = raw.firstRange(of: large)!.lowerBound
        #expect(EmbeddedThumbnail.locate(in: raw, fileSize: raw.count, longSide: 128) == .found(offset: smallAt, length: small.count))
        #expect(EmbeddedThumbnail.locate(in: raw, fileSize: raw.count, longSide: 256) == .found(offset: largeAt, length: large.count))
        #expect(EmbeddedThumbnail.locate(in: raw, fileSize: raw.count, longSide: 2048) == .found(offset: largeAt, length: large.count))
        // The previews lie past a 512-byte prefix: found all the same, to be fetched by range.
        #expect(EmbeddedThumbnail.locate(in: Array(raw.prefix(512)), fileSize: raw.count, longSide: 256)
            == .found(offset: largeAt, length: large.count))
    }
}

@Suite("Embedded thumbnails of hostile files")
struct HostileEmbeddedThumbnailTests {
    @Test("a thumbnail offset past the end, or a length of 4 GiB, is no thumbnail")
    func outOfFile() {
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xD9]
        for (offset, length) in [(0x7FFF_FFF0, jpeg.count), (200, 0xFFFF_FFFF), (0, 0), (300, 5 << 20)] {
            let file = TIFFBuilder.exifJPEG(thumbnailOffset: offset, thumbnailLength: length, payload: jpeg)
            #expect(EmbeddedThumbnail.locate(in: file, fileSize: file.count) == .none, "\(offset) \(length)")
        }
    }

    @Test("an IFD that points at itself ends the walk")
    func selfLoop() {
        let file = TIFFBuilder.selfLoop()
        #expect(EmbeddedThumbnail.locate(in: file, fileSize: file.count) == .none)
    }

    @Test("random bytes and seeded mutations of valid files never give a range outside the file")
    func mutations() throws {
        let folder = try ImageFolder()
        let big = try folder.jpeg("big.jpg", width: 320, height: 240)
        try folder.embed(thumbnail: try folder.jpeg("small.jpg", width: 64, height: 48), in: big)
        let small = try ImageFolder.bytes("\(folder.path)/small.jpg")
        let seeds = [try ImageFolder.bytes(big), TIFFBuilder.raw(previews: [(small, 64, 48), (small, 64, 48)], bigEndian: true)]
        var random = SeededRandom(seed: 17)
        for round in 0..<4000 {
            var file = seeds[round % 2]
            if round % 10 == 9 {
                file = (0..<random.next(4096)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            } else {
                for _ in 0..<1 + random.next(8) where !file.isEmpty {
                    file[random.next(min(file.count, 512))] = UInt8(truncatingIfNeeded: random.next())
                }
            }
            let cut = random.next(file.count + 1), declared = file.count - random.next(64)
            let search = EmbeddedThumbnail.locate(in: Array(file.prefix(cut)), fileSize: declared)
            switch search {
            case .found(let offset, let length):
                #expect(offset >= 0 && length > 0 && length < 4 << 20 && offset + length <= max(0, declared), "round \(round)")
            case .needMore(let upTo):
                #expect(upTo > min(cut, declared) && upTo <= declared, "round \(round)")
            case .none: break
            }
        }
    }
}

@Suite("Image kinds")
struct ImageKindTests {
    @Test("extensions name kinds case-insensitively; first bytes show them")
    func kinds() {
        #expect(["a.JPG", "b.jpeg", "c.Jpe"].allSatisfy { ImageKind.of(name: $0) == .jpeg })
        #expect(ImageKind.of(name: "x.PNG") == .png)
        #expect(["t.tif", "t.TIFF", "r.dng", "r.NEF", "r.cr2", "r.arw"].allSatisfy { ImageKind.of(name: $0) == .tiff })
        #expect(ImageKind.of(name: "notes.txt") == nil && ImageKind.of(name: "jpg") == nil && ImageKind.of(name: ".png") == nil)
        #expect(ImageKind.sniff([0xFF, 0xD8, 0xFF, 0xE0]) == .jpeg)
        #expect(ImageKind.sniff([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) == .png)
        #expect(ImageKind.sniff(Array("MM\u{0}*".utf8)) == .tiff && ImageKind.sniff(Array("II*\u{0}".utf8)) == .tiff)
        #expect(ImageKind.sniff([0x89, 0x50]) == nil && ImageKind.sniff([]) == nil)
    }
}
