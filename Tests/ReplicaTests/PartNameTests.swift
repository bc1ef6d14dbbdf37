import Foundation
import Replica
import SyncEngine
import Testing
import TestSupport

/// The names of download parts: found again by file and version, told apart from fresh
/// temporaries, and still temporaries to the scanner.
@Suite("download part names")
struct PartNameTests {
    let folder = LocalFolder(root: "/tmp/sync")

    @Test("the same file and version give the same part; another version or file another")
    func stable() throws {
        let path = try RemotePath(["docs", "big.bin"])
        let part = folder.partURL(beside: path, version: ETag(value: "abc-1"))
        #expect(part == folder.partURL(beside: path, version: ETag(value: "abc-1")))
        #expect(part.deletingLastPathComponent().path == "/tmp/sync/docs")
        #expect(part != folder.partURL(beside: path, version: ETag(value: "abc-2")))
        #expect(part != folder.partURL(beside: try RemotePath(["docs", "other.bin"]), version: ETag(value: "abc-1")))
    }

    @Test("a part is a temporary to the scanner and resumable; a fresh temporary is not resumable")
    func kinds() throws {
        let path = try RemotePath(["big.bin"])
        let part = folder.partURL(beside: path, version: ETag(value: "abc-1")).lastPathComponent
        #expect(LocalFolder.isTemporary(part))
        #expect(LocalFolder.isResumablePart(part))
        for _ in 0..<50 {
            let fresh = folder.temporaryURL(beside: path).lastPathComponent
            #expect(LocalFolder.isTemporary(fresh))
            #expect(!LocalFolder.isResumablePart(fresh))
        }
        #expect(!LocalFolder.isResumablePart(".tidesync-part-x"))
        #expect(!LocalFolder.isResumablePart("big.bin"))
    }
}

extension PartNameTests {
    @Test("a folder deleted on the server goes with a part kept in it; a file nobody recorded stays")
    func partGoesWithItsFolder() throws {
        let root = temporaryPath("parts-")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let local = LocalFolder(root: root)
        let docs = try RemotePath(["docs"])
        try FileManager.default.createDirectory(atPath: root + "/docs", withIntermediateDirectories: true)
        let part = local.partURL(beside: try RemotePath(["docs", "big.bin"]), version: ETag(value: "v1"))
        try Data("start of big.bin".utf8).write(to: part)
        // Nothing in it is recorded: only the part, which is ours, may go.
        #expect(try local.delete(docs, expected: nil) { _ in false })
        #expect(!FileManager.default.fileExists(atPath: root + "/docs"))

        try FileManager.default.createDirectory(atPath: root + "/docs", withIntermediateDirectories: true)
        try Data("new here".utf8).write(to: URL(fileURLWithPath: root + "/docs/new.txt"))
        #expect(try !local.delete(docs, expected: nil) { _ in false })
        #expect(FileManager.default.fileExists(atPath: root + "/docs/new.txt"))
    }
}
