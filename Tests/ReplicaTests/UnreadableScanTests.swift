import Foundation
import Replica
import SyncEngine
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The scanner tells "not there" from "cannot see it" (issue 13, item 1): only ENOENT and
/// ENOTDIR mean a folder is gone; any other failure leaves it unknown, never empty.
@Suite("Local scanner: folders that cannot be read")
final class UnreadableScanTests {
    let root = temporaryPath("tidesync-unreadable-")

    deinit {
        removeTree(root)  // deeper than PATH_MAX: FileManager cannot remove it
    }

    @Test("only ENOENT and ENOTDIR mean gone; EACCES, EPERM, EMFILE, ENFILE, EIO, ENOMEM, ELOOP mean unreadable")
    func classification() {
        #expect(LocalScanner.isGone(ENOENT) && LocalScanner.isGone(ENOTDIR))
        for code in [EACCES, EPERM, EMFILE, ENFILE, EIO, ENOMEM, ELOOP, ENAMETOOLONG, ESTALE] {
            #expect(!LocalScanner.isGone(code), "errno \(code)")
        }
        #expect(LocalScanner.reason(forError: EACCES) == "permission denied")
        #expect(LocalScanner.reason(forError: EPERM) == "permission denied")
        #expect(LocalScanner.reason(forError: EMFILE) == "too many open files")
        #expect(LocalScanner.reason(forError: EIO) == "input/output error")
        #expect(LocalScanner.read(folder: root + "/missing") == .gone)
    }

    /// A real failure root meets too: `opendir` of a folder whose path is longer than
    /// PATH_MAX fails with ENAMETOOLONG (the tree is made with `mkdirat`/`openat`).
    @Test("a folder the scanner cannot look into is reported unreadable, and what is below it is not read as gone")
    func pathTooLong() throws {
        try FileManager.default.createDirectory(atPath: root + "/top", withIntermediateDirectories: true)
        try Data("x".utf8).write(to: URL(fileURLWithPath: root + "/top/beside.txt"))
        let name = String(repeating: "d", count: 250)
        var fd = open(root + "/top", O_RDONLY | O_DIRECTORY)
        var relative = "top"
        while (root + "/" + relative).utf8.count < Int(PATH_MAX) + 300 {
            #expect(mkdirat(fd, name, 0o755) == 0)
            let next = openat(fd, name, O_RDONLY | O_DIRECTORY)
            close(fd)
            fd = next
            relative += "/" + name
        }
        let file = openat(fd, "deep.txt", O_WRONLY | O_CREAT, 0o644)
        close(file)
        close(fd)

        let scan = try LocalScanner(root: root, exclude: ExcludeList(patterns: [])).scan()
        let unreadable = try #require(scan.unreadable.first, "no folder reported as unreadable")
        #expect(scan.unreadable.count == 1)
        #expect(unreadable.value == "the path is too long")
        #expect(scan.entries[unreadable.key]?.kind == .folder, "the folder itself is still there")
        #expect(!scan.entries.keys.contains { $0 != unreadable.key && $0.isDescendant(of: unreadable.key) })
        #expect(scan.entries[try RemotePath(string: "top/beside.txt")] != nil)
    }

    @Test("a chmod 000 folder is unreadable, not empty",
          .enabled(if: getuid() != 0, "root reads a chmod 000 folder; UnreadableFolderTests runs the real binary as uid 65534 instead"))
    func permissionDenied() throws {
        try FileManager.default.createDirectory(atPath: root + "/sub", withIntermediateDirectories: true)
        try Data("x".utf8).write(to: URL(fileURLWithPath: root + "/sub/a.txt"))
        chmod(root + "/sub", 0)
        defer { chmod(root + "/sub", 0o755) }
        let scan = try LocalScanner(root: root, exclude: ExcludeList(patterns: [])).scan()
        #expect(scan.unreadable == [try RemotePath(string: "sub"): "permission denied"])
        #expect(LocalScanner(root: root, exclude: ExcludeList(patterns: [])).lookUp(try RemotePath(string: "sub/a.txt"))
                == .unreadable(try RemotePath(string: "sub"), reason: "permission denied"))
    }
}
