import Foundation
import SyncEngine
import Testing
import TestSupport

/// The in-memory store's test hooks (its `RemoteStore` contract is checked by the
/// contract suite, which runs over it too).
@Suite("In-memory remote store: test hooks")
struct InMemoryRemoteStoreTests {
    static func scratchFile(_ text: String) throws -> URL {
        let url = URL(fileURLWithPath: temporaryPath("tidesync-mem-"))
        try Data(text.utf8).write(to: url)
        return url
    }

    @Test("setFile writes as another client: parents appear, the version changes, the file id stays")
    func setFileBumpsVersion() async throws {
        let store = InMemoryRemoteStore()
        store.setFile(p("a/b/doc.txt"), contents: Data("one".utf8))
        let first = try await store.entry(at: p("a/b/doc.txt"))
        #expect(try await store.entry(at: p("a/b")).kind == .folder)
        store.setFile(p("a/b/doc.txt"), contents: Data("two!".utf8))
        let second = try await store.entry(at: p("a/b/doc.txt"))
        #expect(!second.etag!.sameValue(as: first.etag!))
        #expect(second.fileID == first.fileID && second.size == 4)
        #expect(store.contents(of: p("a/b/doc.txt")) == Data("two!".utf8))
        #expect(store.contents(of: p("a/b")) == nil)
        #expect(store.contents(of: p("missing")) == nil)
    }

    @Test("a write based on a version another client replaced is refused")
    func staleWriteAfterSetFile() async throws {
        let store = InMemoryRemoteStore()
        let entry = try await store.upload(from: Self.scratchFile("mine"), to: p("f"), condition: .mustNotExist, progress: nil)
        store.setFile(p("f"), contents: Data("theirs".utf8))
        await #expect(throws: ProviderError.self) {
            try await store.upload(from: Self.scratchFile("mine 2"), to: p("f"), condition: .mustMatch(entry.etag!), progress: nil)
        }
        #expect(store.contents(of: p("f")) == Data("theirs".utf8))
    }

    @Test("failNext fails exactly the next operations with the given codes, changing nothing")
    func failNext() async throws {
        let store = InMemoryRemoteStore()
        store.failNext(.serverUnreachable)
        store.failNext(.insufficientQuota)
        for expected in [ProviderError.Code.serverUnreachable, .insufficientQuota] {
            do {
                _ = try await store.makeFolder(at: p("d"))
                Issue.record("expected \(expected)")
            } catch {
                #expect(error.code == expected)
            }
        }
        #expect(try await store.children(of: .root).isEmpty)
        _ = try await store.makeFolder(at: p("d"))
        #expect(try await store.children(of: .root).map(\.path) == [p("d")])
    }

    @Test("without file ids, entries carry none")
    func noFileIDs() async throws {
        let store = InMemoryRemoteStore(fileIDs: false)
        store.setFile(p("x"), contents: Data())
        #expect(try await store.entry(at: p("x")).fileID == nil)
    }

    @Test("contents over the inline limit are kept in a file and still read back by range")
    func spilledContents() async throws {
        let store = InMemoryRemoteStore(inlineLimit: 4)
        let source = try Self.scratchFile("0123456789")
        let entry = try await store.upload(from: source, to: p("big"), condition: .mustNotExist, progress: nil)
        try FileManager.default.removeItem(at: source)
        #expect(entry.size == 10)
        let target = URL(fileURLWithPath: temporaryPath("tidesync-mem-"))
        defer { try? FileManager.default.removeItem(at: target) }
        _ = try await store.download(p("big"), range: ByteRange(offset: 3, length: 4), version: entry.etag, to: target, progress: nil)
        #expect(try Data(contentsOf: target) == Data("3456".utf8))
        #expect(store.contents(of: p("big")) == Data("0123456789".utf8))
    }
}
