import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Issue 17 through the real binary, real fanotify on /tmp's ext4 and a private Apache:
/// image placeholders get thumbnails in the freedesktop cache that GLib itself (`gio info`)
/// takes as valid, without being downloaded; a JPEG's comes from its EXIF thumbnail with one
/// small ranged GET; a rename or a change on the server replaces the thumbnail; a file that
/// is no image, or too large and carries no preview, gets none.
@Suite("thumbnails of placeholders against the real binary",
       .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"),
       .enabled(if: FilesOnDemandProbe.unavailable == nil, "\(FilesOnDemandProbe.unavailable ?? "")"))
final class ThumbnailTests {
    let fixture: DaemonFixture
    let apache: PrivateApache
    let disk: String
    let scratch: String

    init() async throws {
        for tool in ["/usr/bin/cjpeg", "/usr/bin/exiftool", "/usr/bin/gio"] where !FileManager.default.isExecutableFile(atPath: tool) {
            Issue.record("\(tool) is missing: run packaging/install-deps.sh (libjpeg-turbo-progs, libimage-exiftool-perl, libglib2.0-bin)")
            throw CancellationError()
        }
        (fixture, apache, disk) = try await DaemonFixture.onDemand(placeholders: """
            thumbnail_max_fetch = "4MiB"
            thumbnail_cache = "~/user-cache/thumbnails"
            """)
        scratch = fixture.home + "/images"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
    }

    deinit { apache.stopAtEnd() }

    func local(_ name: String) -> String { fixture.local + "/" + name }

    /// A JPEG of random pixels (so it stays large: about 2.5 bytes a pixel at quality 95),
    /// made by libjpeg-turbo's `cjpeg`; with `exif`, exiftool embeds a 160x120 thumbnail.
    func jpeg(width: Int, height: Int, seed: UInt64, exif: Bool) async throws -> Data {
        let name = scratch + "/\(seed)"
        try ppm(width: width, height: height, seed: seed).write(to: URL(fileURLWithPath: name + ".ppm"))
        try await run("/usr/bin/cjpeg", ["-quality", "95", "-outfile", name + ".jpg", name + ".ppm"])
        if exif {
            try ppm(width: 160, height: 120, seed: seed + 1).write(to: URL(fileURLWithPath: name + "-small.ppm"))
            try await run("/usr/bin/cjpeg", ["-outfile", name + "-small.jpg", name + "-small.ppm"])
            try await run("/usr/bin/exiftool", ["-q", "-overwrite_original", "-ThumbnailImage<=" + name + "-small.jpg", name + ".jpg"])
        }
        return try Data(contentsOf: URL(fileURLWithPath: name + ".jpg"))
    }

    func ppm(width: Int, height: Int, seed: UInt64) -> Data {
        var random = SeededRandom(seed: seed)
        var data = Data("P6\n\(width) \(height)\n255\n".utf8)
        var pixels = [UInt64](repeating: 0, count: (width * height * 3 + 7) / 8)
        for index in pixels.indices { pixels[index] = random.next() }
        pixels.withUnsafeBytes { data.append(contentsOf: $0.prefix(width * height * 3)) }
        return data
    }

    /// A PNG of random pixels, by Python's zlib (PNG's own compression; no image library).
    func png(width: Int, height: Int) async throws -> Data {
        let path = scratch + "/noise.png"
        let script = """
            import os, struct, sys, zlib
            w, h = \(width), \(height)
            raw = b"".join(b"\\0" + os.urandom(w * 3) for _ in range(h))
            def chunk(kind, body): return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
            png = b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) \\
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
            open(sys.argv[1], "wb").write(png)
            """
        try await run("/usr/bin/python3", ["-c", script, path])
        return try Data(contentsOf: URL(fileURLWithPath: path))
    }

    func run(_ tool: String, _ arguments: [String]) async throws {
        let result = try await Binary.run(tool, arguments, environment: ["PATH": "/usr/bin:/bin"])
        guard result.status == 0 else {
            Issue.record("\(tool) \(arguments.joined(separator: " ")) failed: \(result.errors)")
            throw CancellationError()
        }
    }

    /// The cache the configuration names, as GLib finds it through `XDG_CACHE_HOME`.
    var cacheHome: String { fixture.home + "/user-cache" }

    /// What GLib says of `name`'s thumbnail: its path (nil: none) and whether it is valid;
    /// with `asUser`, asked by uid 65534 (the folder's owner in the test of a user's folder).
    func gioThumbnail(_ name: String, asUser: Bool = false) async throws -> (path: String?, valid: Bool) {
        var environment = fixture.environment
        environment["XDG_CACHE_HOME"] = cacheHome
        let gio = ["/usr/bin/gio", "info", "-a", "thumbnail::path,thumbnail::is-valid", local(name)]
        let user = asUser ? ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []
        let result = try await Binary.run((user + gio)[0], Array((user + gio).dropFirst()), environment: environment)
        let lines = result.output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let path = lines.first { $0.hasPrefix("thumbnail::path: ") }.map { String($0.dropFirst("thumbnail::path: ".count)) }
        return (path, lines.contains("thumbnail::is-valid: TRUE"))
    }

    func holdsNoData(_ name: String) -> Bool {
        let fd = open(local(name), O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        return fd >= 0 && lseek(fd, 0, 3) < 0 && errno == ENXIO  // SEEK_DATA
    }

    /// The bytes Apache sent for GETs of `name` (its access log's `%O`), and how many GETs.
    func sent(_ name: String) -> (gets: Int, bytes: Int) {
        let lines = ((try? String(contentsOfFile: apache.directory + "/access.log", encoding: .utf8)) ?? "").split(separator: "\n")
        let gets = lines.filter { $0.contains("\"GET ") && $0.contains("/\(name) HTTP") }
        let bytes = gets.compactMap { line -> Int? in
            let fields = line.split(separator: " ")
            return fields.count >= 2 ? Int(fields[fields.count - 2]) : nil
        }
        return (gets.count, bytes.reduce(0, +))
    }

    @Test("image placeholders get thumbnails GLib takes, from a small ranged read; renamed or changed images get new ones")
    func thumbnailsOfPlaceholders() async throws {
        let withExif = try await jpeg(width: 1400, height: 1000, seed: 1, exif: true)
        let plain = try await jpeg(width: 1300, height: 1000, seed: 3, exif: false)
        let large = try await jpeg(width: 2600, height: 1800, seed: 5, exif: false)
        let noise = try await png(width: 700, height: 600)
        #expect(withExif.count > 1 << 20 && plain.count > 1 << 20 && plain.count <= 4 << 20 && large.count > 4 << 20,
                "sizes: \(withExif.count) \(plain.count) \(large.count)")
        try apache.put(withExif, at: "exif.jpg", disk: disk)
        try apache.put(plain, at: "plain.jpeg", disk: disk)
        try apache.put(large, at: "large.JPG", disk: disk)
        try apache.put(noise, at: "noise.png", disk: disk)
        try apache.put(Data(repeating: 7, count: 2 << 20), at: "data.bin", disk: disk)
        try fixture.startDaemon(arguments: ["--log-level", "debug"])
        #expect(try await fixture.waitUntilIdle(seconds: 60), "never idle; log:\n\(fixture.log.suffix(3000))")

        for name in ["exif.jpg", "plain.jpeg", "noise.png"] {
            try await eventually("a valid thumbnail of \(name) (log: \(fixture.log.suffix(2000)))", timeout: .seconds(60)) {
                try await gioThumbnail(name).valid
            }
            let path = try #require(try await gioThumbnail(name).path)
            #expect(path.hasPrefix(cacheHome + "/thumbnails/"), "\(path)")
            var info = Glibc.stat()
            #expect(lstat(path, &info) == 0 && info.st_mode & 0o777 == 0o600, "mode \(String(info.st_mode & 0o777, radix: 8))")
            #expect(holdsNoData(name), "\(name) was downloaded to make its thumbnail")
        }
        // The EXIF thumbnail came from the first bytes alone: one GET of the 64 KiB read.
        let exifSent = sent("exif.jpg")
        #expect(exifSent.gets == 1 && exifSent.bytes < 70_000, "exif.jpg: \(exifSent) of \(withExif.count) bytes")
        #expect(sent("plain.jpeg").bytes >= plain.count, "plain.jpeg is small enough to be fetched whole")
        // Too large to fetch whole, with no preview: only the first bytes were read, no thumbnail.
        try await eventually("large.JPG found to have none (log: \(fixture.log.suffix(2000)))", timeout: .seconds(60)) {
            fixture.log.contains("thumbnails: none for large.JPG")
        }
        let largeSent = sent("large.JPG")
        #expect(largeSent.bytes < 70_000, "large.JPG: \(largeSent)")
        #expect(try await gioThumbnail("large.JPG").path == nil)
        #expect(try await gioThumbnail("data.bin").path == nil && sent("data.bin").gets == 0)

        // Renamed here: the old thumbnail goes, the new name gets one.
        let old = try #require(try await gioThumbnail("exif.jpg").path)
        #expect(rename(local("exif.jpg"), local("renamed.jpg")) == 0)
        try await eventually("a valid thumbnail of renamed.jpg", timeout: .seconds(60)) { try await gioThumbnail("renamed.jpg").valid }
        try await eventually("the old name's thumbnail removed", timeout: .seconds(60)) { !FileManager.default.fileExists(atPath: old) }

        // Changed on the server (a minute later, so its mtime is another second): the
        // thumbnail is made again for the new version.
        let before = try Data(contentsOf: URL(fileURLWithPath: try #require(try await gioThumbnail("renamed.jpg").path)))
        try apache.put(try await jpeg(width: 1500, height: 1000, seed: 9, exif: true), at: "renamed.jpg", disk: disk)
        var later = [timespec(tv_sec: time(nil) + 60, tv_nsec: 0), timespec(tv_sec: time(nil) + 60, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, disk + "/renamed.jpg", &later, 0) == 0)
        _ = try await fixture.tidesync(["sync-now"])
        try await eventually("a new valid thumbnail of the changed renamed.jpg", timeout: .seconds(60)) {
            let now = try await gioThumbnail("renamed.jpg")
            guard now.valid, let path = now.path, let data = FileManager.default.contents(atPath: path) else { return false }
            return data != before
        }
        #expect(holdsNoData("renamed.jpg"))

        // On demand: made again; refusals for what is no image.
        let made = try await fixture.tidesync(["thumbnails"] + ["renamed.jpg", "plain.jpeg", "large.JPG", "noise.png"].map(local))
        #expect(made.status == 4 && made.output.contains("Made the thumbnails of 3 of 4 image(s)"), "\(made.output)\(made.errors)")
        #expect(made.errors.contains("large.JPG: no thumbnail"), "\(made.errors)")
        let refused = try await fixture.tidesync(["thumbnails", local("data.bin")])
        #expect(refused.status == 4 && refused.errors.contains("is not an image"), "\(refused.output)\(refused.errors)")
        #expect(holdsNoData("renamed.jpg") && holdsNoData("noise.png"))
        #expect(await fixture.stopDaemon() == 0)
    }

    /// The owner and mode of `path` (not followed).
    func owner(_ path: String) -> (uid: uid_t, mode: mode_t)? {
        var info = Glibc.stat()
        return lstat(path, &info) == 0 ? (info.st_uid, info.st_mode & 0o777) : nil
    }

    @Test("a user's folder: the root daemon writes the thumbnails as that user, into their cache, and their GLib takes them")
    func usersFolder() async throws {
        // The folder and the cache are uid 65534's; the daemon is root. A link the user put
        // where the x-large thumbnail goes leads to a root-only folder holding a file of that
        // name: root would delete it (it does not describe the image); the user cannot.
        let uri = "file://" + local("exif.jpg")
        let hash = try await Binary.run("/bin/sh", ["-c", "printf %s \"$1\" | md5sum", "sh", uri], environment: ["PATH": "/usr/bin:/bin"])
        let name = String(hash.output.prefix(32)) + ".png"
        let rootOnly = fixture.home + "/root-only"
        for folder in [cacheHome, cacheHome + "/thumbnails", rootOnly] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            #expect(chmod(folder, 0o700) == 0)
        }
        try Data("root's".utf8).write(to: URL(fileURLWithPath: rootOnly + "/" + name))
        #expect(symlink(rootOnly, cacheHome + "/thumbnails/x-large") == 0)
        for path in [fixture.local, cacheHome, cacheHome + "/thumbnails", cacheHome + "/thumbnails/x-large"] {
            #expect(lchown(path, 65534, 65534) == 0, "\(path)")
        }
        #expect(chmod(fixture.home, 0o711) == 0)
        try apache.put(try await jpeg(width: 1400, height: 1000, seed: 11, exif: true), at: "exif.jpg", disk: disk)
        try fixture.startDaemon(arguments: ["--log-level", "debug"])
        try await eventually("a valid thumbnail of exif.jpg for its owner (log: \(fixture.log.suffix(2000)))", timeout: .seconds(60)) {
            try await gioThumbnail("exif.jpg", asUser: true).valid
        }
        #expect(fixture.log.contains("thumbnails go to \(cacheHome)/thumbnails, written as uid 65534, gid 65534"))
        // The sizes not made are cleared after the ones made are stored: wait for the round's end.
        try await eventually("the round's report (log: \(fixture.log.suffix(2000)))", timeout: .seconds(60)) {
            fixture.log.contains("thumbnails: made for 1 image placeholder(s)")
        }
        for size in ["normal", "large"] {
            let folder = owner(cacheHome + "/thumbnails/" + size), file = owner(cacheHome + "/thumbnails/\(size)/" + name)
            #expect(folder?.uid == 65534 && folder?.mode == 0o700, "\(size): \(String(describing: folder))")
            #expect(file?.uid == 65534 && file?.mode == 0o600, "\(size)/\(name): \(String(describing: file))")
        }
        #expect(FileManager.default.contents(atPath: rootOnly + "/" + name) == Data("root's".utf8),
                "root followed the user's link and removed a file the user cannot")
        #expect(!FileManager.default.fileExists(atPath: fixture.home + "/.cache/thumbnails"), "written to the daemon's own cache")
        #expect(holdsNoData("exif.jpg"))
        #expect(await fixture.stopDaemon() == 0)
    }

    @Test("a cache that cannot be written: no image is fetched and the log says why; asked again once it can, the thumbnail comes")
    func unwritableCache() async throws {
        // `normal` is a file where the cache needs a folder.
        try FileManager.default.createDirectory(atPath: cacheHome + "/thumbnails", withIntermediateDirectories: true)
        try Data("not a folder".utf8).write(to: URL(fileURLWithPath: cacheHome + "/thumbnails/normal"))
        try apache.put(try await jpeg(width: 1400, height: 1000, seed: 13, exif: true), at: "exif.jpg", disk: disk)
        try fixture.startDaemon(arguments: ["--log-level", "debug"])
        try await eventually("the cache refused (log: \(fixture.log.suffix(2000)))", timeout: .seconds(60)) {
            fixture.log.contains("thumbnails: cannot write \(cacheHome)/thumbnails: \(cacheHome)/thumbnails/normal is not a folder")
        }
        #expect(try await fixture.waitUntilIdle(seconds: 60))
        #expect(sent("exif.jpg").gets == 0, "fetched for a cache that cannot take it: \(sent("exif.jpg"))")
        #expect(unlink(cacheHome + "/thumbnails/normal") == 0)
        let made = try await fixture.tidesync(["thumbnails", local("exif.jpg")])
        #expect(made.status == 0, "\(made.output)\(made.errors)")
        #expect(try await gioThumbnail("exif.jpg").valid && holdsNoData("exif.jpg"))
        #expect(await fixture.stopDaemon() == 0)
    }
}
