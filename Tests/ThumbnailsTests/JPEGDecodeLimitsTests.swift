import Foundation
import TestSupport
import Testing
import Thumbnails

/// The error `decode` throws for `bytes`, or nil when it decodes.
func refusal(of bytes: [UInt8]) -> ThumbnailError? {
    do throws(ThumbnailError) {
        _ = try ThumbnailRenderer.decode(bytes, fitting: 0)
        return nil
    } catch {
        return error
    }
}

/// `jpeg` with its first scan (the DC scan cjpeg writes first) repeated `times` times more
/// right after it. Such a first scan overwrites what it sets, so the image stays the same;
/// only the scan count grows.
func withFirstScanRepeated(_ jpeg: [UInt8], times: Int) throws -> [UInt8] {
    let first = try #require(JPEGScans.of(jpeg).first)
    let scan = Array(jpeg[first.start..<first.end])
    return Array(jpeg[..<first.end]) + Array(repeating: scan, count: times).flatMap { $0 } + Array(jpeg[first.end...])
}

@Suite("Decoding hostile and cut JPEGs")
struct JPEGDecodeLimitsTests {
    @Test("a progressive JPEG of more than 500 scans is refused as corrupt, though djpeg without -maxscans reads it")
    func tooManyScans() throws {
        let folder = try ImageFolder()
        let progressive = try ImageFolder.bytes(try folder.jpeg("p.jpg", width: 256, height: 192, arguments: ["-progressive"]))
        let scans = JPEGScans.of(progressive).count
        #expect(scans == 10)
        let hostile = try withFirstScanRepeated(progressive, times: ThumbnailRenderer.maximumScans + 1 - scans)
        let file = "\(folder.path)/many.jpg"
        try Data(hostile).write(to: URL(fileURLWithPath: file))
        // djpeg exits 2 after warnings ("Inconsistent progression sequence"), 1 on an error.
        #expect(try ChildProcess.collect("djpeg", ["-outfile", "/dev/null", file]).status == 2)
        #expect(try ChildProcess.collect("djpeg", ["-maxscans", "500", "-outfile", "/dev/null", file]).status == 1)
        #expect(refusal(of: hostile) == .corrupt("more than 500 scans"))
        // Exactly at the limit it decodes, to the same pixels as the original.
        let atLimit = try withFirstScanRepeated(progressive, times: ThumbnailRenderer.maximumScans - scans)
        #expect(try ThumbnailRenderer.decode(atLimit, fitting: 0) == ThumbnailRenderer.decode(progressive, fitting: 0))
    }

    @Test("a progressive JPEG from cjpeg decodes, to the colours of its baseline twin")
    func progressiveDecodes() throws {
        let folder = try ImageFolder()
        let progressive = try ThumbnailRenderer.decode(
            try ImageFolder.bytes(try folder.jpeg("p.jpg", width: 900, height: 600, arguments: ["-progressive"])), fitting: 256)
        let baseline = try ThumbnailRenderer.decode(try ImageFolder.bytes(try folder.jpeg("b.jpg", width: 900, height: 600)), fitting: 256)
        #expect([progressive.width, progressive.height] == [256, 171] as [Int])
        let difference = zip(progressive.pixels, baseline.pixels).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
        #expect(difference / progressive.pixels.count < 3)
    }

    @Test("a progressive JPEG whose coefficients need more than 64 MiB is refused as unsupported, one under is read")
    func progressiveMemory() throws {
        let folder = try ImageFolder()
        let progressive = try ImageFolder.bytes(try folder.jpeg("p.jpg", width: 64, height: 48, arguments: ["-progressive"]))
        let frame = try #require((0..<progressive.count - 9).first { progressive[$0] == 0xFF && progressive[$0 + 1] == 0xC2 })
        func claiming(_ width: Int, _ height: Int) -> [UInt8] {
            var bytes = progressive
            bytes.replaceSubrange(frame + 5..<frame + 9, with: [UInt8(height >> 8), UInt8(height & 0xFF), UInt8(width >> 8), UInt8(width & 0xFF)])
            return bytes
        }
        // 4:2:0 at 128 bytes a block per component: 6000x4000 needs 72 MB of coefficients
        // (under the old 256 MiB), 4000x3000 needs 36 MB: it passes the limit and is then
        // refused only because its data is missing.
        guard case .unsupported(let why) = refusal(of: claiming(6000, 4000)) else {
            Issue.record("6000x4000: \(String(describing: refusal(of: claiming(6000, 4000))))")
            return
        }
        #expect(why.contains("64 MiB"))
        guard case .corrupt = refusal(of: claiming(4000, 3000)) else {
            Issue.record("4000x3000: \(String(describing: refusal(of: claiming(4000, 3000))))")
            return
        }
    }

    @Test("a JPEG missing only its EOI marker decodes to the pixels of the whole file",
          arguments: [[], ["-progressive"], ["-restart", "1"], ["-optimize"], ["-grayscale"]])
    func missingEndMarker(arguments: [String]) throws {
        let folder = try ImageFolder()
        let whole = try ImageFolder.bytes(try folder.jpeg("photo.jpg", width: 300, height: 200, arguments: arguments))
        #expect(whole.suffix(2) == [0xFF, 0xD9])
        #expect(try ThumbnailRenderer.decode(Array(whole.dropLast(2)), fitting: 0) == ThumbnailRenderer.decode(whole, fitting: 0))
        #expect(try ThumbnailRenderer.decode(Array(whole.dropLast(2)), fitting: 64).width == 64)
    }

    @Test("a JPEG cut inside its rows is refused, never shown with grey rows",
          arguments: [[], ["-progressive"], ["-restart", "1"], ["-arithmetic"]])
    func cutInsideRows(arguments: [String]) throws {
        let folder = try ImageFolder()
        let whole = try ImageFolder.bytes(try folder.jpeg("photo.jpg", width: 300, height: 200, arguments: arguments))
        for cut in [whole.count / 2, whole.count * 9 / 10, whole.count - 40] {
            guard case .corrupt = refusal(of: Array(whole.prefix(cut))) else {
                Issue.record("cut at \(cut) of \(whole.count): \(String(describing: refusal(of: Array(whole.prefix(cut)))))")
                continue
            }
        }
    }

    @Test("a progressive JPEG cut between scans decodes once every coefficient has come, not before")
    func cutBetweenScans() throws {
        let folder = try ImageFolder()
        let whole = try ImageFolder.bytes(try folder.jpeg("p.jpg", width: 300, height: 200, arguments: ["-progressive"]))
        let scans = JPEGScans.of(whole)
        // cjpeg's script: DC, then Y 1-5, Cr, Cb, Y 6-63 first passes; refinements from scan 6.
        #expect(scans.count == 10)
        let refined = try ThumbnailRenderer.decode(Array(whole.prefix(scans[9].start)), fitting: 0)
        #expect([refined.width, refined.height] == [300, 200] as [Int])
        for cut in [scans[1].start, scans[4].start] {
            guard case .corrupt = refusal(of: Array(whole.prefix(cut))) else {
                Issue.record("cut at \(cut): \(String(describing: refusal(of: Array(whole.prefix(cut)))))")
                continue
            }
        }
    }
}
