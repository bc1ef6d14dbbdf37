import SyncEngine
import Testing

/// The digests the engine computes (`ContentDigest`) give the published answers: the
/// examples of FIPS 180-2 for SHA-256 and SHA-1, RFC 1321's suite for MD5, whole or fed in
/// pieces that cross the 64-byte blocks anywhere.
@Suite("Content digests")
struct ContentDigestTests {
    /// The digest of `bytes` fed in pieces of the sizes in `pieces`, cycled; whole when empty.
    static func hex(_ algorithm: DigestAlgorithm, _ bytes: [UInt8], pieces: [Int] = []) -> String {
        var digest = ContentDigest(algorithm)
        guard !pieces.isEmpty else {
            digest.update(bytes)
            return digest.hex()
        }
        var index = 0, piece = 0
        while index < bytes.count {
            let end = min(bytes.count, index + pieces[piece % pieces.count])
            bytes[index..<end].withUnsafeBytes { digest.update($0) }
            index = end
            piece += 1
        }
        return digest.hex()
    }

    static func hex(_ algorithm: DigestAlgorithm, _ text: String) -> String { hex(algorithm, Array(text.utf8)) }

    static let twoBlocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
    static let fourBlocks = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"
    static let millionA = [UInt8](repeating: 0x61, count: 1_000_000)

    @Test("SHA-256 gives the FIPS 180-2 examples")
    func sha256() {
        #expect(Self.hex(.sha256, "") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(Self.hex(.sha256, "abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Self.hex(.sha256, Self.twoBlocks) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(Self.hex(.sha256, Self.fourBlocks) == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
    }

    @Test("SHA-1 gives the FIPS 180-2 examples")
    func sha1() {
        #expect(Self.hex(.sha1, "") == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(Self.hex(.sha1, "abc") == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(Self.hex(.sha1, Self.twoBlocks) == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        #expect(Self.hex(.sha1, Self.fourBlocks) == "a49b2446a02c645bf419f995b67091253a04a259")
    }

    @Test("MD5 gives the RFC 1321 test suite")
    func md5() {
        #expect(Self.hex(.md5, "") == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(Self.hex(.md5, "a") == "0cc175b9c0f1b6a831c399e269772661")
        #expect(Self.hex(.md5, "abc") == "900150983cd24fb0d6963f7d28e17f72")
        #expect(Self.hex(.md5, "message digest") == "f96b697d7cb7938d525a2f31aaf161d0")
        #expect(Self.hex(.md5, "abcdefghijklmnopqrstuvwxyz") == "c3fcd3d76192e4007dfb496cca67e13b")
        #expect(Self.hex(.md5, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
                == "d174ab98d277d9f5a5611c2c9f419d9f")
        #expect(Self.hex(.md5, String(repeating: "1234567890", count: 8)) == "57edf4a22be3c955ac49da2e2107b67a")
    }

    @Test("Adler-32 starts at 1 and gives zlib's answers")
    func adler32() {
        #expect(Self.hex(.adler32, "") == "00000001")
        #expect(Self.hex(.adler32, "Wikipedia") == "11e60398")
    }

    /// A million `a`s (the FIPS long example) whole, and in pieces that start and end at
    /// every offset in a block: 1, 63, 64, 65 and 997 bytes, and one piece larger than the
    /// 5552 bytes Adler-32 sums before its modulo.
    @Test("a million a's give the published digest whole and in pieces across block boundaries",
          arguments: [[], [1, 63, 64, 65, 997], [7], [64], [6000, 1]])
    func millionA(_ pieces: [Int]) {
        #expect(Self.hex(.sha256, Self.millionA, pieces: pieces) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        #expect(Self.hex(.sha1, Self.millionA, pieces: pieces) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
        #expect(Self.hex(.md5, Self.millionA, pieces: pieces) == "7707d6ae4e027c70eea2a935c2296f21")
        #expect(Self.hex(.adler32, Self.millionA, pieces: pieces) == "15d870f9")
    }

    @Test("a digest is a value: a copy fed further leaves the original as it was")
    func valueSemantics() {
        for algorithm in DigestAlgorithm.allCases {
            var original = ContentDigest(algorithm)
            original.update(Array("ab".utf8))
            var copy = original
            copy.update(Array("c".utf8))
            #expect(copy.hex() == Self.hex(algorithm, "abc"))
            #expect(original.hex() == Self.hex(algorithm, "ab"))
            original.update(Array("c".utf8))
            #expect(original.hex() == Self.hex(algorithm, "abc"), "reading the digest does not end it")
        }
    }
}
