// Content digests: SHA-256 for bundle manifests, and the SHA-1, MD5 and Adler-32 that
// servers offer as checksums (Nextcloud's `oc:checksums`). Pure Swift, no I/O; the target
// is compiled optimised even in debug builds (Package.swift), since unoptimised it hashes
// a few MB/s and the test suite hashes bundles. Checked against the standard vectors.

/// A digest the engine can compute; the raw value is the name servers use.
public enum DigestAlgorithm: String, CaseIterable, Sendable {
    case sha256 = "SHA256"
    case sha1 = "SHA1"
    case md5 = "MD5"
    case adler32 = "ADLER32"
}

/// Computes a `DigestAlgorithm` over bytes fed in pieces. Pure: the caller reads.
public struct ContentDigest: Sendable {
    private var state: State

    private enum State: Sendable {
        case sha256(SHA256)
        case sha1(SHA1)
        case md5(MD5)
        case adler32(a: UInt32, b: UInt32)
    }

    public init(_ algorithm: DigestAlgorithm) {
        switch algorithm {
        case .sha256: state = .sha256(SHA256())
        case .sha1: state = .sha1(SHA1())
        case .md5: state = .md5(MD5())
        case .adler32: state = .adler32(a: 1, b: 0)
        }
    }

    public mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        switch state {
        case .sha256(var digest):
            digest.update(bytes)
            state = .sha256(digest)
        case .sha1(var digest):
            digest.update(bytes)
            state = .sha1(digest)
        case .md5(var digest):
            digest.update(bytes)
            state = .md5(digest)
        case .adler32(var a, var b):
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
            state = .adler32(a: a, b: b)
        }
    }

    /// The digest in lowercase hex.
    public func hex() -> String {
        let bytes: [UInt8]
        switch state {
        case .sha256(let digest): bytes = digest.finish()
        case .sha1(let digest): bytes = digest.finish()
        case .md5(let digest): bytes = digest.finish()
        case .adler32(let a, let b): bytes = Self.bigEndian((b << 16) | a)
        }
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }

    static func bigEndian(_ word: UInt32) -> [UInt8] {
        [UInt8(word >> 24), UInt8(word >> 16 & 0xFF), UInt8(word >> 8 & 0xFF), UInt8(word & 0xFF)]
    }
}

/// A block hash over 64-byte blocks with Merkle–Damgård padding (SHA-1 and MD5 share it).
private struct BlockBuffer: Sendable {
    var pending: [UInt8] = []
    var length: UInt64 = 0

    /// Feeds `bytes`, calling `block` for every full 64-byte block.
    mutating func update(_ bytes: UnsafeRawBufferPointer, _ block: (ArraySlice<UInt8>) -> Void) {
        length &+= UInt64(bytes.count)
        var index = 0
        if !pending.isEmpty {
            let take = min(64 - pending.count, bytes.count)
            pending += bytes[0..<take]
            index = take
            if pending.count == 64 {
                block(pending[...])
                pending.removeAll(keepingCapacity: true)
            }
        }
        let whole = Array(bytes[index...])
        var start = 0
        while whole.count - start >= 64 {
            block(whole[start..<start + 64])
            start += 64
        }
        pending += whole[start...]
    }

    /// The padded last block(s), with the bit length big- or little-endian.
    func padding(bigEndian: Bool) -> [UInt8] {
        var tail = pending + [0x80]
        while tail.count % 64 != 56 { tail.append(0) }
        let bits = length &* 8
        let lengthBytes = (0..<8).map { UInt8(truncatingIfNeeded: bits >> (8 * UInt64($0))) }
        return tail + (bigEndian ? lengthBytes.reversed() : lengthBytes)
    }
}

/// SHA-256 (FIPS 180-4), for the content hashes of bundle members (`sha256:<hex>`).
private struct SHA256: Sendable {
    var h: [UInt32] = [
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19,
    ]
    var buffer = BlockBuffer()

    static let k: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var h = self.h
        buffer.update(bytes) { Self.compress(&h, $0) }
        self.h = h
    }

    func finish() -> [UInt8] {
        var h = self.h
        let tail = buffer.padding(bigEndian: true)
        for start in stride(from: 0, to: tail.count, by: 64) { Self.compress(&h, tail[start..<start + 64]) }
        return h.flatMap(ContentDigest.bigEndian)
    }

    static func compress(_ h: inout [UInt32], _ block: ArraySlice<UInt8>) {
        func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            let base = block.startIndex
            for i in 0..<16 {
                w[i] = UInt32(block[base + i * 4]) << 24 | UInt32(block[base + i * 4 + 1]) << 16
                    | UInt32(block[base + i * 4 + 2]) << 8 | UInt32(block[base + i * 4 + 3])
            }
            for i in 16..<64 {
                let s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
                let s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
                w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
            }
            var (a, b, c, d, e, f, g, hh) = (h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7])
            for i in 0..<64 {
                let s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
                let choice = (e & f) ^ (~e & g)
                let t1 = hh &+ s1 &+ choice &+ k[i] &+ w[i]
                let s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
                let majority = (a & b) ^ (a & c) ^ (b & c)
                (hh, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ s0 &+ majority)
            }
            h[0] &+= a; h[1] &+= b; h[2] &+= c; h[3] &+= d
            h[4] &+= e; h[5] &+= f; h[6] &+= g; h[7] &+= hh
        }
    }
}

private struct SHA1: Sendable {
    var h: [UInt32] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0]
    var buffer = BlockBuffer()

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var h = self.h
        buffer.update(bytes) { Self.compress(&h, $0) }
        self.h = h
    }

    func finish() -> [UInt8] {
        var h = self.h
        let tail = buffer.padding(bigEndian: true)
        for start in stride(from: 0, to: tail.count, by: 64) { Self.compress(&h, tail[start..<start + 64]) }
        return h.flatMap(ContentDigest.bigEndian)
    }

    static func compress(_ h: inout [UInt32], _ block: ArraySlice<UInt8>) {
        var w = [UInt32](repeating: 0, count: 80)
        let base = block.startIndex
        for i in 0..<16 {
            w[i] = (0..<4).reduce(0) { $0 << 8 | UInt32(block[base + 4 * i + $1]) }
        }
        for i in 16..<80 {
            let x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]
            w[i] = x << 1 | x >> 31
        }
        var (a, b, c, d, e) = (h[0], h[1], h[2], h[3], h[4])
        for i in 0..<80 {
            let (f, k): (UInt32, UInt32) = switch i {
            case 0..<20: ((b & c) | (~b & d), 0x5A82_7999)
            case 20..<40: (b ^ c ^ d, 0x6ED9_EBA1)
            case 40..<60: ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
            default: (b ^ c ^ d, 0xCA62_C1D6)
            }
            let t = (a << 5 | a >> 27) &+ f &+ e &+ k &+ w[i]
            (e, d, c, b, a) = (d, c, b << 30 | b >> 2, a, t)
        }
        h[0] &+= a; h[1] &+= b; h[2] &+= c; h[3] &+= d; h[4] &+= e
    }
}

private struct MD5: Sendable {
    var h: [UInt32] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476]
    var buffer = BlockBuffer()

    static let shifts: [UInt32] = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21]
    static let constants: [UInt32] = [
        0xD76A_A478, 0xE8C7_B756, 0x2420_70DB, 0xC1BD_CEEE, 0xF57C_0FAF, 0x4787_C62A, 0xA830_4613, 0xFD46_9501,
        0x6980_98D8, 0x8B44_F7AF, 0xFFFF_5BB1, 0x895C_D7BE, 0x6B90_1122, 0xFD98_7193, 0xA679_438E, 0x49B4_0821,
        0xF61E_2562, 0xC040_B340, 0x265E_5A51, 0xE9B6_C7AA, 0xD62F_105D, 0x0244_1453, 0xD8A1_E681, 0xE7D3_FBC8,
        0x21E1_CDE6, 0xC337_07D6, 0xF4D5_0D87, 0x455A_14ED, 0xA9E3_E905, 0xFCEF_A3F8, 0x676F_02D9, 0x8D2A_4C8A,
        0xFFFA_3942, 0x8771_F681, 0x6D9D_6122, 0xFDE5_380C, 0xA4BE_EA44, 0x4BDE_CFA9, 0xF6BB_4B60, 0xBEBF_BC70,
        0x289B_7EC6, 0xEAA1_27FA, 0xD4EF_3085, 0x0488_1D05, 0xD9D4_D039, 0xE6DB_99E5, 0x1FA2_7CF8, 0xC4AC_5665,
        0xF429_2244, 0x432A_FF97, 0xAB94_23A7, 0xFC93_A039, 0x655B_59C3, 0x8F0C_CC92, 0xFFEF_F47D, 0x8584_5DD1,
        0x6FA8_7E4F, 0xFE2C_E6E0, 0xA301_4314, 0x4E08_11A1, 0xF753_7E82, 0xBD3A_F235, 0x2AD7_D2BB, 0xEB86_D391,
    ]

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var h = self.h
        buffer.update(bytes) { Self.compress(&h, $0) }
        self.h = h
    }

    func finish() -> [UInt8] {
        var h = self.h
        let tail = buffer.padding(bigEndian: false)
        for start in stride(from: 0, to: tail.count, by: 64) { Self.compress(&h, tail[start..<start + 64]) }
        return h.flatMap { ContentDigest.bigEndian($0).reversed() }
    }

    static func compress(_ h: inout [UInt32], _ block: ArraySlice<UInt8>) {
        let base = block.startIndex
        let m = (0..<16).map { i in (0..<4).reduce(UInt32(0)) { $0 | UInt32(block[base + 4 * i + $1]) << (8 * UInt32($1)) } }
        var (a, b, c, d) = (h[0], h[1], h[2], h[3])
        for i in 0..<64 {
            let (f, g): (UInt32, Int) = switch i {
            case 0..<16: ((b & c) | (~b & d), i)
            case 16..<32: ((d & b) | (~d & c), (5 * i + 1) % 16)
            case 32..<48: (b ^ c ^ d, (3 * i + 5) % 16)
            default: (c ^ (b | ~d), (7 * i) % 16)
            }
            let shift = shifts[(i / 16) * 4 + i % 4]
            let sum = a &+ f &+ constants[i] &+ m[g]
            (a, d, c) = (d, c, b)
            b = b &+ (sum << shift | sum >> (32 - shift))
        }
        h[0] &+= a; h[1] &+= b; h[2] &+= c; h[3] &+= d
    }
}
