// Real images made with real tools (cjpeg, exiftool, python3), so the parsers are tested
// against what cameras and editors write rather than against bytes shaped by the same hand.
import Foundation
import TestSupport
import Testing

/// A tool a test needs is missing: the test fails and says what to install.
struct MissingTool: Error, CustomStringConvertible {
    let name: String
    var description: String { "\(name) is not installed: run packaging/install-deps.sh" }
}

/// A tool exited with an error.
struct ToolFailed: Error, CustomStringConvertible {
    let description: String
}

/// A scratch folder with images in it, removed at the end of the test that made it.
final class ImageFolder {
    let path = temporaryPath("tidesync-thumbs-")

    init() throws { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }

    deinit { removeTree(path) }

    /// Runs `tool` (looked up in PATH) and returns its standard output; throws when it is
    /// missing or fails.
    @discardableResult
    static func run(_ tool: String, _ arguments: [String], environment: [String: String]? = nil) throws -> Data {
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        guard folders.contains(where: { FileManager.default.isExecutableFile(atPath: "\($0)/\(tool)") }) else {
            throw MissingTool(name: tool)
        }
        let result = try ChildProcess.collect(tool, arguments, environment: environment)
        guard result.status == 0 else {
            throw ToolFailed(description: "\(tool) \(arguments) exited \(result.status): \(String(decoding: result.errors, as: UTF8.self))")
        }
        return result.output
    }

    /// A `width` x `height` JPEG made by cjpeg from a PPM of `pattern` (RGB by column and
    /// row; a gradient by default); its path.
    func jpeg(_ name: String, width: Int, height: Int, arguments: [String] = [],
              pattern: ((Int, Int) -> [UInt8])? = nil) throws -> String {
        let ppm = "\(path)/\(name).ppm", jpeg = "\(path)/\(name)"
        let gradient = { (x: Int, y: Int) in [UInt8(x * 255 / max(1, width - 1)), UInt8(y * 255 / max(1, height - 1)), UInt8((x ^ y) & 0xFF)] }
        var bytes = Array("P6\n\(width) \(height)\n255\n".utf8)
        bytes.reserveCapacity(bytes.count + width * height * 3)
        for y in 0..<height {
            for x in 0..<width { bytes += (pattern ?? gradient)(x, y) }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: ppm))
        try Self.run("cjpeg", arguments + ["-outfile", jpeg, ppm])
        return jpeg
    }

    /// Embeds `thumbnail` as `image`'s EXIF thumbnail with exiftool.
    func embed(thumbnail: String, in image: String) throws {
        try Self.run("exiftool", ["-q", "-overwrite_original", "-ThumbnailImage<=\(thumbnail)", image])
    }

    /// The EXIF thumbnail bytes exiftool reads from `image`.
    static func exifThumbnail(of image: String) throws -> [UInt8] {
        Array(try run("exiftool", ["-b", "-ThumbnailImage", image]))
    }

    /// Writes a PNG with python3's zlib: `channels` 1 (gray), 3 or 4, 8-bit, a gradient;
    /// without `pixels`, a header and a token IDAT only (for headers that must be refused).
    func png(_ name: String, width: Int, height: Int, channels: Int, pixels: Bool = true) throws -> String {
        let file = "\(path)/\(name)"
        let colorType = [1: 0, 3: 2, 4: 6][channels] ?? 2
        let script = """
        import struct, zlib, sys
        w, h, c, t, with_pixels = \(width), \(height), \(channels), \(colorType), \(pixels ? "True" : "False")
        def chunk(kind, data):
            return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff)
        out = b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, t, 0, 0, 0))
        if with_pixels:
            raw = b''.join(b'\\x00' + bytes(((x * 255 // max(1, w - 1)) if k == 0 else (y * 255 // max(1, h - 1)) if k == 1 else 200) for x in range(w) for k in range(c)) for y in range(h))
            out += chunk(b'IDAT', zlib.compress(raw))
        else:
            out += chunk(b'IDAT', zlib.compress(bytes(64)))
        out += chunk(b'IEND', b'')
        open(sys.argv[1], 'wb').write(out)
        """
        try Self.run("python3", ["-c", script, file])
        return file
    }

    /// The file at `path`.
    static func bytes(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }
}
