import Foundation
import SyncEngine
import Testing
import TestSupport

/// Names a sync client meets in the wild, round-tripped through every store.
@Suite("RemoteStore contract: file names")
struct FileNameContractTests {
    static let names: [String] = [
        "with space.txt", "hash#tag", "percent%20sign", "question?mark", "amp&ersand",
        "quote\"double", "quote'single", "plus+and=equals;semi", "é-nfc-\u{00E9}", "e\u{0301}-nfd",
        "日本語のファイル", "emoji 🎉.txt", String(repeating: "n", count: 251) + ".txt",
    ]

    @Test("unusual names upload, list and download unchanged", arguments: StoreKind.available)
    func unusualNames(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            _ = try await f.store.makeFolder(at: p("dir #1 & ü"))
            let names = Self.names.filter { $0.utf8.count <= kind.longestName }  // the long one's limit: `longestName`
            for name in names {
                let path = try p("dir #1 & ü").appending(name)
                try await f.put(path, "contents of \(name)")
            }
            let listed = try await f.store.children(of: p("dir #1 & ü")).map(\.path.name)
            #expect(Set(listed.map { Array($0.utf8) }) == Set(names.map { Array($0.utf8) }))
            #expect(listed.count == names.count)
            for name in names {
                #expect(try await f.read(p("dir #1 & ü").appending(name)) == "contents of \(name)")
            }
        }
    }

    @Test("names in NFC and NFD are two different files", arguments: StoreKind.available)
    func normalisationForms(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            let nfc = "caf\u{00E9}", nfd = "cafe\u{0301}"
            try await f.put(RemotePath([nfc]), "composed")
            try await f.put(RemotePath([nfd]), "decomposed")
            let names = try await f.store.children(of: .root).map(\.path.name)
            #expect(names.count == 2)
            #expect(Set(names.map { Array($0.utf8) }) == Set([Array(nfc.utf8), Array(nfd.utf8)]))
            #expect(try await f.read(RemotePath([nfc])) == "composed")
            #expect(try await f.read(RemotePath([nfd])) == "decomposed")
        }
    }

    @Test("a 255-byte name works and a 256-byte one is refused before any request")
    func longNames() async throws {
        let longest = String(repeating: "x", count: 255)
        #expect(try RemotePath([longest]).name == longest)
        #expect(throws: ProviderError.self) { try RemotePath([longest + "x"]) }
        #expect(throws: ProviderError.self) { try RemotePath(["a/b"]) }
        #expect(throws: ProviderError.self) { try RemotePath([".."]) }
    }

    @Test("a 255-byte name round-trips", arguments: StoreKind.available)
    func longestName(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            let name = String(repeating: "é", count: 127) + "x"  // 255 bytes of UTF-8
            #expect(name.utf8.count == 255)
            guard name.utf8.count <= kind.longestName else {
                // lighttpd: a 500 for every try (README, compatibility), and nothing is listed.
                await expectCode(.serverFailedItem) { try await f.put(RemotePath([name]), "long") }
                #expect(try await f.store.children(of: .root).isEmpty)
                return
            }
            try await f.put(RemotePath([name]), "long")
            #expect(try await f.store.children(of: .root).map(\.path.name) == [name])
            #expect(try await f.read(RemotePath([name])) == "long")
        }
    }
}
