// Reading a file's bytes: comparing two files, and the digests compared with a
// server's checksums and recorded in bundle manifests.
import Glibc
import ContentHash
import Foundation
import SyncEngine

extension LocalFolder {
    /// True when the file at `path` still has `expected` and holds exactly the bytes of `other`.
    public func contentsEqual(_ path: RemotePath, expected: LocalStat, other: URL) throws(ProviderError) -> Bool {
        try require(path, holds: expected, kind: .file)
        let first = open(absolute(path), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard first >= 0 else { throw Self.error(errno, "cannot read \(absolute(path))") }
        defer { close(first) }
        let second = open(other.path, O_RDONLY | O_CLOEXEC)
        guard second >= 0 else { throw Self.error(errno, "cannot read \(other.path)") }
        defer { close(second) }
        let size = 1 << 20
        let a = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        let b = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        defer { a.deallocate(); b.deallocate() }
        while true {
            let countA = Self.readFully(first, a, size), countB = Self.readFully(second, b, size)
            guard countA >= 0, countB >= 0 else { throw Self.error(errno, "cannot compare \(absolute(path))") }
            if countA != countB || memcmp(a, b, countA) != 0 { return false }
            if countA == 0 { break }
        }
        try require(path, holds: expected, kind: .file)
        return true
    }

    /// The checksum of the file at `path`, which must have `expected` before and after it
    /// is read (`versionMismatch` otherwise).
    public func checksum(_ path: RemotePath, expected: LocalStat,
                         algorithm: ContentChecksum.Algorithm) throws(ProviderError) -> String {
        try require(path, holds: expected, kind: .file)
        let hex = try Self.digest(ofFileAt: absolute(path), algorithm)
        try require(path, holds: expected, kind: .file)
        return hex
    }

    /// The `algorithm` digest (lowercase hex) of the file at `absolutePath`, read without
    /// following a symlink, 1 MiB at a time. Public for packaging/bench/HashBench.
    public static func digest(ofFileAt absolutePath: String, _ algorithm: DigestAlgorithm) throws(ProviderError) -> String {
        let fd = open(absolutePath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw error(errno, "cannot read \(absolutePath)") }
        defer { close(fd) }
        let size = 1 << 20
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        defer { buffer.deallocate() }
        var digest = ContentDigest(algorithm)
        while true {
            let count = readFully(fd, buffer, size)
            guard count >= 0 else { throw error(errno, "cannot read \(absolutePath)") }
            if count == 0 { break }
            digest.update(UnsafeRawBufferPointer(start: buffer, count: count))
        }
        return digest.hex()
    }

    /// The content hash a bundle manifest records: `sha256:<hex>`.
    static func contentHash(ofFileAt absolutePath: String) throws(ProviderError) -> String {
        "sha256:" + (try digest(ofFileAt: absolutePath, .sha256))
    }

    static func readFully(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
        var done = 0
        while done < count {
            let n = read(fd, buffer + done, count - done)
            if n < 0 { if errno == EINTR { continue }; return -1 }
            if n == 0 { break }
            done += n
        }
        return done
    }
}
