import Foundation
import Glibc
import LocalStore
import SyncModel
import Testing
import TestSupport

/// The local-directory store's versions are "size-seconds.nanoseconds-inode" in hex, as
/// `String(_:radix:)` writes them: the state DBs of earlier releases hold them, so a faster
/// formatter must give the same text, for times before 1970 too, or every file would read as
/// changed on the server after an upgrade.
@Suite("the local-directory store's versions")
struct LocalDirectoryVersionTests {
    @Test("a listing's versions are size-mtime-inode in hex, as before, for odd sizes and times before 1970")
    func versionText() async throws {
        let root = temporaryPath("tidesync-version-")
        defer { removeTree(root) }
        let times: [(seconds: Int, nanoseconds: Int)] = [(0, 0), (1, 1), (-1, 999_999_999), (-86_400 * 365 * 30, 5),
                                                        (1_700_000_000, 123_456_789), (4_102_444_800, 0xABCDEF)]
        for (index, time) in times.enumerated() {
            let path = root + "/f\(index)"
            try writeFile(path, String(repeating: "x", count: index * 4099))
            var stamps = [timespec(tv_sec: time.seconds, tv_nsec: time.nanoseconds),
                          timespec(tv_sec: time.seconds, tv_nsec: time.nanoseconds)]
            #expect(utimensat(AT_FDCWD, path, &stamps, 0) == 0, "set the mtime of \(path)")
        }
        let store = LocalDirectoryStore(root: root)
        let listed = try await store.listing(below: .root).entries
        #expect(listed.count == times.count)
        for entry in listed {
            var st = stat()
            #expect(lstat(root + "/" + entry.path.name, &st) == 0)
            let expected = "\(String(Int64(st.st_size), radix: 16))-\(String(Int64(st.st_mtim.tv_sec), radix: 16)).\(String(Int64(st.st_mtim.tv_nsec), radix: 16))-\(String(UInt64(st.st_ino), radix: 16))"
            #expect(entry.etag?.value == expected, "\(entry.path)")
            #expect(try await store.entry(at: entry.path).etag == entry.etag)
        }
    }
}
