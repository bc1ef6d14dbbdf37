import Foundation
import Glibc
import TestSupport
import Testing
import Thumbnails

@Suite("The freedesktop thumbnail cache")
struct ThumbnailCacheTests {
    @Test("file URIs are GLib's, byte for byte, for names with spaces, ?, #, %, ;, non-ASCII and a newline")
    func urisMatchGLib() throws {
        let folder = try ImageFolder()
        for name in ["a b.png", "q?.jpg", "h#.jpg", "p%25.jpg", "caf\u{E9} \u{1F600}.png", "nl\nname.png", "s;[x]~!$&'()*+,=:@.jpg"] {
            let path = "\(folder.path)/\(name)"
            #expect(FileManager.default.createFile(atPath: path, contents: Data()))
            let output = String(decoding: try ImageFolder.run("gio", ["info", "-a", "standard::size", path]), as: UTF8.self)
            let glib = output.split(separator: "\n").first { $0.hasPrefix("uri: ") }.map { String($0.dropFirst(5)) }
            #expect(ThumbnailCache.uri(forPath: path) == glib, "\(name)")
        }
    }

    @Test("the file name is the MD5 of the URI, as in the standard's example")
    func fileName() {
        #expect(ThumbnailCache.fileName(forURI: "file:///home/jens/photos/me.png") == "c6ee772d9e49320e97ec29a7eb5b1697.png")
        let cache = ThumbnailCache.standard(environment: ["HOME": "/home/u", "XDG_CACHE_HOME": ""])
        #expect(cache.path(forURI: "file:///home/jens/photos/me.png", size: .xLarge).path
            == "/home/u/.cache/thumbnails/x-large/c6ee772d9e49320e97ec29a7eb5b1697.png")
        #expect(ThumbnailCache.standard(environment: ["HOME": "/h", "XDG_CACHE_HOME": "/c"]).root.path == "/c/thumbnails")
    }

    @Test("a stored thumbnail is 0600 in 0700 folders, replaced whole, and removed at every size")
    func storeAndRemove() throws {
        let folder = try ImageFolder()
        let cache = ThumbnailCache(root: URL(fileURLWithPath: "\(folder.path)/cache/thumbnails"))
        try cache.store([1, 2, 3], forURI: "file:///x", size: .large)
        try cache.store([4, 5], forURI: "file:///x", size: .large)
        try cache.store([6], forURI: "file:///x", size: .normal)
        let file = cache.path(forURI: "file:///x", size: .large).path
        #expect(try ImageFolder.bytes(file) == [4, 5])
        #expect(mode(file) == 0o600)
        for path in ["\(folder.path)/cache", "\(folder.path)/cache/thumbnails", "\(folder.path)/cache/thumbnails/large"] {
            #expect(mode(path) == 0o700, "\(path)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(folder.path)/cache/thumbnails/large").count == 1)
        cache.remove(uri: "file:///x")
        #expect(!FileManager.default.fileExists(atPath: file))
        #expect(!FileManager.default.fileExists(atPath: cache.path(forURI: "file:///x", size: .normal).path))
    }

    @Test("GLib takes a stored thumbnail as valid for its file, and not once the mtime differs", arguments: [ThumbnailSize.normal, .large])
    func glibAccepts(size: ThumbnailSize) throws {
        let folder = try ImageFolder()
        let image = try folder.jpeg("photo #1.jpg", width: 640, height: 480)
        var status = stat()
        #expect(stat(image, &status) == 0)
        let uri = ThumbnailCache.uri(forPath: image), cache = ThumbnailCache(root: URL(fileURLWithPath: "\(folder.path)/xdg/thumbnails"))
        for (mtime, valid) in [(Int64(status.st_mtim.tv_sec), true), (Int64(status.st_mtim.tv_sec) - 7, false)] {
            let png = try ThumbnailRenderer.cachePNG(from: try ImageFolder.bytes(image), size: size, uri: uri, mtime: mtime,
                                                     fileSize: Int64(status.st_size), mimeType: "image/jpeg")
            try cache.store(png, forURI: uri, size: size)
            #expect(cache.validThumbnail(uri: uri, mtime: Int64(status.st_mtim.tv_sec), fileSize: Int64(status.st_size), size: size) == valid)
            var environment = ProcessInfo.processInfo.environment
            environment["XDG_CACHE_HOME"] = "\(folder.path)/xdg"
            let output = String(decoding: try ImageFolder.run("gio", ["info", "-a", "thumbnail::path,thumbnail::is-valid", image],
                                                                environment: environment), as: UTF8.self)
            #expect(output.contains("thumbnail::path: \(cache.path(forURI: uri, size: size).path)"), "\(output)")
            #expect(output.contains("thumbnail::is-valid: \(valid ? "TRUE" : "FALSE")"), "\(output)")
        }
        #expect(!cache.validThumbnail(uri: uri + "x", mtime: Int64(status.st_mtim.tv_sec), fileSize: Int64(status.st_size), size: size))
        #expect(!cache.validThumbnail(uri: uri, mtime: Int64(status.st_mtim.tv_sec) - 7, fileSize: Int64(status.st_size) + 1, size: size))
    }

    private func mode(_ path: String) -> Int {
        var status = stat()
        return stat(path, &status) == 0 ? Int(status.st_mode & 0o777) : -1
    }
}
