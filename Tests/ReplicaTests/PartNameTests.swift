import Foundation
import Replica
import SyncEngine
import Testing

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
