// Content digests: SHA-256 for bundle manifests, and the SHA-1, MD5 and Adler-32 that
// servers offer as checksums (Nextcloud's `oc:checksums`). SHA-256, SHA-1 and MD5 come from
// swift-crypto (BoringSSL's assembly on Linux, as fast in a debug build as in a release
// one); Adler-32, which no crypto library carries, is the few lines below. No I/O.
import Crypto

/// A digest the engine can compute; the raw value is the name servers use.
public enum DigestAlgorithm: String, CaseIterable, Sendable {
    case sha256 = "SHA256"
    case sha1 = "SHA1"
    case md5 = "MD5"
    case adler32 = "ADLER32"
}

/// Computes a `DigestAlgorithm` over bytes fed in pieces. Pure: the caller reads.
public struct ContentDigest: Sendable {
    private var hasher: any PieceHasher

    public init(_ algorithm: DigestAlgorithm) {
        switch algorithm {
        case .sha256: hasher = CryptoHasher<SHA256>()
        case .sha1: hasher = CryptoHasher<Insecure.SHA1>()
        case .md5: hasher = CryptoHasher<Insecure.MD5>()
        case .adler32: hasher = Adler32()
        }
    }

    public mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        hasher.update(bytes)
    }

    /// The digest's bytes.
    public func bytes() -> [UInt8] { hasher.finish() }

    /// The digest in lowercase hex.
    public func hex() -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: hasher.finish().flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }
}

/// A hash fed in pieces: what `ContentDigest` needs of each algorithm.
private protocol PieceHasher: Sendable {
    mutating func update(_ bytes: UnsafeRawBufferPointer)
    /// The digest of everything fed so far; more may be fed afterwards.
    func finish() -> [UInt8]
}

/// A swift-crypto hash function, updated in place: its copy-on-write context is copied only
/// when the `ContentDigest` holding it was copied.
private struct CryptoHasher<Function: HashFunction>: PieceHasher {
    var function = Function()

    mutating func update(_ bytes: UnsafeRawBufferPointer) { function.update(bufferPointer: bytes) }

    func finish() -> [UInt8] { Array(function.finalize()) }
}

/// Adler-32 (RFC 1950), big-endian as servers print it.
private struct Adler32: PieceHasher {
    var a: UInt32 = 1
    var b: UInt32 = 0

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        // 5552 bytes is the most that can be summed before the modulo (zlib's NMAX).
        var index = 0
        while index < bytes.count {
            let end = min(bytes.count, index + 5552)
            for byte in bytes[index..<end] {
                a &+= UInt32(byte)
                b &+= a
            }
            a %= 65521
            b %= 65521
            index = end
        }
    }

    func finish() -> [UInt8] {
        let word = (b << 16) | a
        return [UInt8(word >> 24), UInt8(word >> 16 & 0xFF), UInt8(word >> 8 & 0xFF), UInt8(word & 0xFF)]
    }
}
