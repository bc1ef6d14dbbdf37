import Foundation
import Glibc
import SystemCalls
import Testing
import TestSupport

/// `StatX`: `lstat`'s fields as they are, and a birth time that neither `utimensat` nor a
/// rename changes, and that a new file given a freed inode number does not share.
@Suite("statx birth times")
struct StatXTests {
    @Test("the fields match lstat, and a birth time survives utimensat and rename but not a new inode")
    func birthTime() throws {
        let root = temporaryPath("tidesync-statx-")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        try writeFile(root + "/a", "same")
        var st = stat()
        #expect(lstat(root + "/a", &st) == 0)
        let first = try #require(StatX.of(root + "/a", in: AT_FDCWD))
        #expect(first.inode == UInt64(st.st_ino) && first.size == 4 && first.mode == st.st_mode)
        #expect(first.modificationNanoseconds == Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec))
        guard first.birthNanoseconds != 0 else {
            // tmpfs before Linux 5.x and some network file systems keep none: 0, "unknown".
            print("StatXTests: \(root) keeps no birth times; only the lstat fields were checked")
            return
        }
        var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, root + "/a", &times, 0) == 0)
        #expect(rename(root + "/a", root + "/b") == 0)
        let moved = try #require(StatX.of(root + "/b", in: AT_FDCWD))
        #expect(moved.birthNanoseconds == first.birthNanoseconds && moved.modificationNanoseconds == 1_000_000_000_000_000_000)
        let fd = open(root + "/b", O_RDONLY | O_CLOEXEC)
        #expect(fd >= 0)
        #expect(StatX.of(descriptor: fd) == moved)
        close(fd)
        // A new file, made after the old one is gone, is born later whatever inode it gets.
        #expect(unlink(root + "/b") == 0)
        try writeFile(root + "/c", "same")
        let new = try #require(StatX.of(root + "/c", in: AT_FDCWD))
        #expect(new.birthNanoseconds > first.birthNanoseconds)
        #expect(StatX.of(root + "/missing", in: AT_FDCWD) == nil && errno == ENOENT)
    }
}
