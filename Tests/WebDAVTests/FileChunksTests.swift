import Foundation
import SyncEngine
import Testing
import TestSupport
@testable import WebDAV

#if canImport(Glibc)
import Glibc
#endif

/// An upload's body: a file written while it is read fails the body before its last
/// chunk goes out, so the server's atomic PUT keeps what it had (a half-old, half-new
/// version landing and then reading as someone else's edit was a false conflict).
@Suite("Upload bodies")
struct FileChunksTests {
    static func file(_ size: Int) throws -> String {
        let path = temporaryPath("tidesync-chunks-")
        try Data(repeating: 0x61, count: size).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("a file written while its body is read fails the body before the last chunk")
    func changedWhileRead() async throws {
        let path = try Self.file(1 << 20)
        defer { unlink(path) }
        let file = try OpenFile(reading: path)
        let chunks = FileChunks(file: file, length: 1 << 20, chunkSize: 256 << 10, progress: nil, unchanged: try file.status())
        var iterator = chunks.makeAsyncIterator()
        #expect(try await iterator.next() != nil)
        let writer = open(path, O_WRONLY | O_CLOEXEC)
        #expect(pwrite(writer, "new", 3, 0) == 3)
        // A later mtime, set: a write within the same timestamp tick would keep size and
        // mtime, and nothing the body checks would have changed.
        var st = stat()
        #expect(fstat(writer, &st) == 0)
        let later = timespec(tv_sec: st.st_mtim.tv_sec + 1, tv_nsec: st.st_mtim.tv_nsec)
        #expect(futimens(writer, [later, later]) == 0)
        close(writer)
        var failure: ProviderError?
        do {
            while try await iterator.next() != nil {}
        } catch let error as ProviderError {
            failure = error
        }
        #expect(failure?.code == .cannotSynchronize)
    }

    @Test("an unchanged file is read whole")
    func unchanged() async throws {
        let path = try Self.file((1 << 20) + 7)
        defer { unlink(path) }
        let file = try OpenFile(reading: path)
        let chunks = FileChunks(file: file, length: (1 << 20) + 7, chunkSize: 256 << 10, progress: nil, unchanged: try file.status())
        var total = 0
        for try await chunk in chunks { total += chunk.readableBytes }
        #expect(total == (1 << 20) + 7)
    }
}
