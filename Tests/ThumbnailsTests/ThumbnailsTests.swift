import Foundation
import Testing
import TestSupport
import Thumbnails

#if canImport(Glibc)
import Glibc
#endif

/// The Thumbnails module on real files: JPEGs made by libjpeg-turbo's `cjpeg` with EXIF
/// thumbnails embedded by exiftool, hostile variants of them, PNGs, the cache as GLib's
/// `gio` reads it.
@Suite("thumbnails: EXIF previews, rendering, the freedesktop cache")
struct ThumbnailsTests {
    let folder: String

    init() throws {
        folder = temporaryPath("tidesync-thumbs-")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for tool in ["/usr/bin/cjpeg", "/usr/bin/exiftool", "/usr/bin/gio"] where !FileManager.default.isExecutableFile(atPath: tool) {
            Issue.record("\(tool) is missing: run packaging/install-deps.sh")
            throw CancellationError()
        }
    }

    func tool(_ path: String, _ arguments: [String]) throws -> Data {
        let (status, output, errors) = try ChildProcess.collect(path, arguments, environment: ["PATH": "/usr/bin:/bin"])
        guard status == 0 else {
            Issue.record("\(path) \(arguments) failed: \(String(decoding: errors, as: UTF8.self))")
            throw CancellationError()
        }
        return output
    }

    /// A JPEG of `width` x `height` random pixels; with `exif`, a 160x120 EXIF thumbnail.
    func jpeg(_ name: String, width: Int, height: Int, exif: Bool, seed: UInt64 = 1) throws -> [UInt8] {
        let base = folder + "/" + name
        var random = SeededRandom(seed: seed)
        func ppm(_ path: String, _ w: Int, _ h: Int) throws {
            var data = Data("P6\n\(w) \(h)\n255\n".utf8)
            data.append(contentsOf: (0..<(w * h * 3)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
            try data.write(to: URL(fileURLWithPath: path))
        }
        try ppm(base + ".ppm", width, height)
        _ = try tool("/usr/bin/cjpeg", ["-outfile", base + ".jpg", base + ".ppm"])
        if exif {
            try ppm(base + "-small.ppm", 160, 120)
            _ = try tool("/usr/bin/cjpeg", ["-outfile", base + "-small.jpg", base + "-small.ppm"])
            _ = try tool("/usr/bin/exiftool", ["-q", "-overwrite_original", "-ThumbnailImage<=" + base + "-small.jpg", base + ".jpg"])
        }
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: base + ".jpg")))
    }

    @Test("the EXIF thumbnail exiftool embedded is found byte for byte; a short prefix asks for more; none without one")
    func exifThumbnail() throws {
        let file = try jpeg("exif", width: 400, height: 300, exif: true)
        let embedded = [UInt8](try tool("/usr/bin/exiftool", ["-b", "-ThumbnailImage", folder + "/exif.jpg"]))
        #expect(embedded.count > 100)
        guard case .found(let offset, let length) = EmbeddedThumbnail.locate(in: Array(file.prefix(128 << 10)), fileSize: file.count) else {
            Issue.record("no thumbnail found")
            return
        }
        #expect(Array(file[offset..<(offset + length)]) == embedded)
        // The IFD is in the first bytes, the thumbnail past a 200-byte prefix: read up to its start.
        guard case .needMore(let end) = EmbeddedThumbnail.locate(in: Array(file.prefix(200)), fileSize: file.count) else {
            Issue.record("a 200-byte prefix did not ask for more")
            return
        }
        #expect(end > 200 && end <= offset + 2)
        #expect(EmbeddedThumbnail.locate(in: Array(file.prefix(end)), fileSize: file.count) == .found(offset: offset, length: length))
        let plain = try jpeg("plain", width: 300, height: 200, exif: false)
        #expect(EmbeddedThumbnail.locate(in: plain, fileSize: plain.count) == .none)
        #expect(EmbeddedThumbnail.locate(in: Array("not an image".utf8), fileSize: 12) == .none)
    }

    @Test("a raw file's JPEG preview in a SubIFD is found; the largest of two wins")
    func rawPreview() throws {
        let small = try jpeg("p1", width: 64, height: 48, exif: false), large = try jpeg("p2", width: 320, height: 240, exif: false, seed: 2)
        let file = Self.tiff(previews: [small, large])
        guard case .found(let offset, let length) = EmbeddedThumbnail.locate(in: Array(file.prefix(4096)), fileSize: file.count) else {
            Issue.record("no preview found")
            return
        }
        #expect(Array(file[offset..<(offset + length)]) == large)
    }

    /// A little-endian TIFF: IFD0 (a 1x1 image) whose SubIFDs tag names one IFD per preview,
    /// each with JPEGInterchangeFormat and its length; the previews after the IFDs.
    static func tiff(previews: [[UInt8]]) -> [UInt8] {
        var bytes: [UInt8] = [0x49, 0x49, 0x2A, 0x00, 8, 0, 0, 0]
        func u16(_ value: Int) { bytes += [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }
        func u32(_ value: Int) { for shift in [0, 8, 16, 24] { bytes.append(UInt8(value >> shift & 0xFF)) } }
        func entry(_ tag: Int, _ type: Int, _ count: Int, _ value: Int) { u16(tag); u16(type); u32(count); u32(value) }
        let subIFDs = 8 + 2 + 3 * 12 + 4
        let arrayAt = subIFDs + previews.count * (2 + 2 * 12 + 4)
        var dataAt = arrayAt + previews.count * 4
        u16(3); entry(0x0100, 3, 1, 1); entry(0x0101, 3, 1, 1); entry(0x014A, 4, previews.count, previews.count == 1 ? subIFDs : arrayAt); u32(0)
        for preview in previews {
            u16(2); entry(0x0201, 4, 1, dataAt); entry(0x0202, 4, 1, preview.count); u32(0)
            dataAt += preview.count
        }
        for index in previews.indices { u32(subIFDs + index * (2 + 2 * 12 + 4)) }
        for preview in previews { bytes += preview }
        return bytes
    }

    @Test("hostile headers: offsets past the end, a 4 GiB length, an IFD pointing at itself, random mutations")
    func hostileHeaders() throws {
        let file = try jpeg("hostile", width: 200, height: 150, exif: true)
        guard case .found(let offset, _) = EmbeddedThumbnail.locate(in: file, fileSize: file.count) else {
            Issue.record("no thumbnail in the valid file")
            return
        }
        // The file cut before the thumbnail ends: the range would pass the end.
        #expect(EmbeddedThumbnail.locate(in: Array(file.prefix(offset + 10)), fileSize: offset + 10) == .none)
        // A self-referencing IFD chain and huge counts, in a raw file.
        var looping = Self.tiff(previews: [try jpeg("tiny", width: 16, height: 16, exif: false)])
        looping[4] = 8; looping[Int(8 + 2 + 3 * 12)] = 8  // IFD0's next IFD is itself
        _ = EmbeddedThumbnail.locate(in: looping, fileSize: looping.count)
        var huge = Self.tiff(previews: [try jpeg("tiny2", width: 16, height: 16, exif: false)])
        let lengthField = 8 + 2 + 3 * 12 + 4 + 2 + 12 + 8
        huge.replaceSubrange(lengthField..<(lengthField + 4), with: [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(EmbeddedThumbnail.locate(in: huge, fileSize: huge.count) == .none)
        // Thousands of random mutations of the first KiB: never a crash, never a range outside.
        var random = SeededRandom(seed: 17)
        for _ in 0..<5000 {
            var mutated = Array(file.prefix(64 << 10))
            for _ in 0..<(1 + random.next(8)) { mutated[random.next(min(1024, mutated.count))] = UInt8(truncatingIfNeeded: random.next()) }
            let size = random.next(4) == 0 ? random.next(file.count) + 1 : file.count
            switch EmbeddedThumbnail.locate(in: mutated, fileSize: size) {
            case .found(let at, let length):
                #expect(at >= 0 && length > 0 && at + length <= size && length <= EmbeddedThumbnail.maximumLength)
            case .needMore(let end): #expect(end > mutated.count && end <= size && end - mutated.count <= EmbeddedThumbnail.maximumReadAhead)
            case .none: break
            }
        }
    }

    /// The PNG's width and height (IHDR) and its tEXt chunks.
    static func png(_ bytes: [UInt8]) -> (width: Int, height: Int, text: [String: String]) {
        func u32(_ at: Int) -> Int { bytes[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) } }
        var text: [String: String] = [:]
        var at = 8
        while at + 8 <= bytes.count {
            let length = u32(at), kind = String(decoding: bytes[(at + 4)..<(at + 8)], as: UTF8.self)
            if kind == "tEXt", let zero = bytes[(at + 8)..<(at + 8 + length)].firstIndex(of: 0) {
                text[String(decoding: bytes[(at + 8)..<zero], as: UTF8.self)] = String(decoding: bytes[(zero + 1)..<(at + 8 + length)], as: UTF8.self)
            }
            at += 12 + length
        }
        return (u32(16), u32(20), text)
    }

    @Test("a JPEG and a PNG shrink to each size, keep their aspect, carry the tEXt keys; huge and broken ones are refused")
    func rendering() throws {
        let photo = try jpeg("photo", width: 1200, height: 800, exif: false)
        for size in ThumbnailSize.allCases {
            let out = try ThumbnailRenderer.cachePNG(from: photo, size: size, uri: "file:///a%20b.jpg", mtime: 1_700_000_000,
                                                     fileSize: 12345, mimeType: "image/jpeg")
            let png = Self.png(out)
            #expect(png.width == min(1200, size.pixels) && png.height == min(800, Int((Double(size.pixels) * 2 / 3).rounded())), "\(size): \(png.width)x\(png.height)")
            #expect(png.text["Thumb::URI"] == "file:///a%20b.jpg" && png.text["Thumb::MTime"] == "1700000000"
                    && png.text["Thumb::Size"] == "12345" && png.text["Thumb::Mimetype"] == "image/jpeg")
        }
        // A PNG of the module's own making, 40x300, read back and shrunk.
        let tall = try ThumbnailRenderer.cachePNG(from: try jpeg("tall", width: 40, height: 300, exif: false), size: .xxLarge,
                                                  uri: "u", mtime: 1, fileSize: 1, mimeType: nil)
        let again = Self.png(try ThumbnailRenderer.cachePNG(from: tall, size: .normal, uri: "u", mtime: 1, fileSize: 1, mimeType: nil))
        #expect(again.width == 17 && again.height == 128, "\(again.width)x\(again.height)")

        // Refused from the header alone: a PNG of 100000 x 100000, a JPEG of 65000 x 65000.
        var header: [UInt8] = Array(tall.prefix(33))
        header.replaceSubrange(16..<24, with: [0, 1, 0x86, 0xA0, 0, 1, 0x86, 0xA0])
        #expect(throws: ThumbnailError.self) { try ThumbnailRenderer.cachePNG(from: header, size: .large, uri: "u", mtime: 1, fileSize: 1, mimeType: nil) }
        var wide = photo
        if let sof = (2..<(wide.count - 9)).first(where: { wide[$0] == 0xFF && wide[$0 + 1] == 0xC0 }) {
            wide.replaceSubrange((sof + 5)..<(sof + 9), with: [0xFD, 0xE8, 0xFD, 0xE8])
        }
        do {
            _ = try ThumbnailRenderer.cachePNG(from: wide, size: .large, uri: "u", mtime: 1, fileSize: 1, mimeType: nil)
            Issue.record("a 65000 x 65000 JPEG was decoded")
        } catch {
            #expect(error.description.contains("65000x65000"), "\(error)")
        }
        // Cut short, or not an image: an error, never grey rows.
        #expect(throws: ThumbnailError.self) {
            try ThumbnailRenderer.cachePNG(from: Array(photo.prefix(photo.count / 2)), size: .large, uri: "u", mtime: 1, fileSize: 1, mimeType: nil)
        }
        #expect(throws: ThumbnailError.self) { try ThumbnailRenderer.cachePNG(from: Array(tall.prefix(200)), size: .large, uri: "u", mtime: 1, fileSize: 1, mimeType: nil) }
        #expect(throws: ThumbnailError.self) { try ThumbnailRenderer.cachePNG(from: [1, 2, 3], size: .large, uri: "u", mtime: 1, fileSize: 1, mimeType: nil) }
    }

    @Test("URIs as GLib makes them; stored thumbnails are 0600 in 0700 folders and valid for gio; a wrong mtime is not")
    func cacheAsGLibReadsIt() throws {
        let images = folder + "/pics dir"
        try FileManager.default.createDirectory(atPath: images, withIntermediateDirectories: true)
        let names = ["a b?#%.jpg", "é ü\tx;[].jpg", "plain.jpg"]
        let cache = ThumbnailCache(root: URL(fileURLWithPath: folder + "/home/.cache/thumbnails"))
        for name in names {
            let path = images + "/" + name
            let bytes = try jpeg("src", width: 300, height: 200, exif: false)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let gio = String(decoding: try tool("/usr/bin/gio", ["info", path]), as: UTF8.self)
            let uri = ThumbnailCache.uri(forPath: path)
            #expect(gio.contains("uri: " + uri + "\n"), "\(uri) vs \(gio.split(separator: "\n").first { $0.hasPrefix("uri:") } ?? "")")
            var info = stat()
            _ = lstat(path, &info)
            let png = try ThumbnailRenderer.cachePNG(from: bytes, size: .large, uri: uri, mtime: Int64(info.st_mtim.tv_sec),
                                                     fileSize: Int64(info.st_size), mimeType: nil)
            try cache.store(png, forURI: uri, size: .large)
            let stored = cache.path(forURI: uri, size: .large).path
            #expect(stored.hasSuffix("/large/" + ThumbnailCache.fileName(forURI: uri)) && ThumbnailCache.fileName(forURI: uri).count == 36)
            var mode = stat()
            #expect(lstat(stored, &mode) == 0 && mode.st_mode & 0o777 == 0o600)
            #expect(lstat(folder + "/home/.cache/thumbnails/large", &mode) == 0 && mode.st_mode & 0o777 == 0o700)
            let environment = ["HOME": folder + "/home", "PATH": "/usr/bin:/bin"]
            let (_, said, _) = try ChildProcess.collect("/usr/bin/gio", ["info", "-a", "thumbnail::path,thumbnail::is-valid", path],
                                                        environment: environment)
            let text = String(decoding: said, as: UTF8.self)
            #expect(text.contains("thumbnail::path: " + stored) && text.contains("thumbnail::is-valid: TRUE"), "\(text)")

            // Stamped with another mtime: GLib finds it and says it is not valid.
            let stale = try ThumbnailRenderer.cachePNG(from: bytes, size: .large, uri: uri, mtime: Int64(info.st_mtim.tv_sec) - 5,
                                                       fileSize: Int64(info.st_size), mimeType: nil)
            try cache.store(stale, forURI: uri, size: .large)
            let (_, after, _) = try ChildProcess.collect("/usr/bin/gio", ["info", "-a", "thumbnail::is-valid", path], environment: environment)
            #expect(String(decoding: after, as: UTF8.self).contains("thumbnail::is-valid: FALSE"))
            cache.remove(uri: uri)
            #expect(!FileManager.default.fileExists(atPath: stored))
        }
    }
}
