import SyncEngine
import Testing

/// The checksums servers offer (Nextcloud's `oc:checksums`) and the digests the engine
/// computes to compare a local file with them.
@Suite("Content checksums")
struct ContentChecksumTests {
    static func hex(_ text: String, _ algorithm: ContentChecksum.Algorithm, pieces: Int = 0) -> String {
        var digest = ContentDigest(algorithm)
        let bytes = Array(text.utf8)
        if pieces > 0 {
            var index = 0
            while index < bytes.count {
                let end = min(bytes.count, index + pieces)
                bytes[index..<end].withUnsafeBytes { digest.update($0) }
                index = end
            }
        } else {
            bytes.withUnsafeBytes { digest.update($0) }
        }
        return digest.hex()
    }

    static let fox = "The quick brown fox jumps over the lazy dog"

    @Test("SHA-1, MD5 and Adler-32 give the published test vectors")
    func vectors() {
        #expect(Self.hex("", .sha1) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(Self.hex("abc", .sha1) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(Self.hex(Self.fox, .sha1) == "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12")
        #expect(Self.hex("", .md5) == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(Self.hex("abc", .md5) == "900150983cd24fb0d6963f7d28e17f72")
        #expect(Self.hex(Self.fox, .md5) == "9e107d9d372bb6826bd81d3542a419d6")
        #expect(Self.hex("Wikipedia", .adler32) == "11e60398")
    }

    @Test("a file fed in pieces of any size gives the digest of the whole", arguments: [1, 7, 63, 64, 65, 1000])
    func pieces(_ size: Int) {
        let text = String(repeating: "tidesync keeps both versions. ", count: 400)
        for algorithm in ContentChecksum.Algorithm.allCases {
            #expect(Self.hex(text, algorithm, pieces: size) == Self.hex(text, algorithm))
        }
    }

    @Test("a server's list is parsed strongest first; unknown or broken entries are left out")
    func parse() {
        let list = ContentChecksum.parse("ADLER32:8ae90960 MD5:D70B40F177B14B470D1756A3C12B963A SHA1:3ee962b839762adb0ad8ba6023a4690be478de6f")
        #expect(list.map(\.algorithm) == [.sha1, .md5, .adler32])
        #expect(list[1].hex == "d70b40f177b14b470d1756a3c12b963a")
        #expect(ContentChecksum.parse("SHA256:abcd SHA1: MD5:xyz").isEmpty)
        #expect(ContentChecksum.parse("").isEmpty)
    }
}
