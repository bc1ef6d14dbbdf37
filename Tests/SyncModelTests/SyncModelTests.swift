import SyncModel
import Testing

@Suite("ETag")
struct ETagTests {
    @Test("header forms parse into value and weakness", arguments: [
        ("\"abc\"", ETag(value: "abc")), ("W/\"abc\"", ETag(value: "abc", isWeak: true)),
        ("  \"x-1\"  ", ETag(value: "x-1")), ("bare", ETag(value: "bare")),
    ])
    func parse(header: String, expected: ETag) {
        #expect(ETag(header: header) == expected)
    }

    @Test("empty tags are no tags")
    func empty() {
        #expect(ETag(header: "") == nil)
        #expect(ETag(header: "\"\"") == nil)
        #expect(ETag(header: "W/") == nil)
    }

    @Test("a weak and a strong tag of one value name the same version")
    func sameValue() {
        #expect(ETag(value: "a", isWeak: true).sameValue(as: ETag(value: "a")))
        #expect(!ETag(value: "a").sameValue(as: ETag(value: "b")))
        #expect(ETag(value: "a", isWeak: true).strongHeaderValue == "\"a\"")
    }
}

@Suite("RemotePath")
struct RemotePathTests {
    @Test("NFC and NFD spellings of a name are different paths, in sets too")
    func byteExactEquality() throws {
        let nfc = try RemotePath(["caf\u{00E9}"]), nfd = try RemotePath(["cafe\u{0301}"])
        #expect(nfc != nfd)
        #expect(Set([nfc, nfd]).count == 2)
        #expect(try RemotePath(["caf\u{00E9}"]) == nfc)
    }

    @Test("parents, names and descendants")
    func structure() throws {
        let path = try RemotePath(string: "/a/b/c.txt/")
        #expect(path.components == ["a", "b", "c.txt"])
        let ab = try RemotePath(string: "a/b"), a = try RemotePath(string: "a"), abb = try RemotePath(string: "a/bb")
        #expect(path.name == "c.txt" && path.parent == ab)
        #expect(path.isDescendant(of: a))
        #expect(path.isDescendant(of: .root))
        #expect(!path.isDescendant(of: abb))
        #expect(RemotePath.root.parent == .root && RemotePath.root.isRoot)
    }

    @Test("unusable names are refused with a reason", arguments: ["", ".", "..", "a/b", "nul\u{0}", String(repeating: "x", count: 256)])
    func invalid(name: String) {
        #expect(throws: ProviderError.self) { try RemotePath([name]) }
    }
}

@Suite("ProviderError")
struct ProviderErrorTests {
    @Test("conditions the user must clear park the domain; conflicts need a decision")
    func dispositions() {
        #expect(ProviderError(.serverUnreachable, "x").disposition == .parkDomain)
        #expect(ProviderError(.notAuthenticated, "x").disposition == .parkDomain)
        #expect(ProviderError(.insufficientQuota, "x").disposition == .parkDomain)
        #expect(ProviderError(.localDiskFull, "x").disposition == .parkDomain)
        #expect(ProviderError(.locked, "x").disposition == .retry)
        #expect(ProviderError(.versionMismatch, "x").disposition == .resolve)
        #expect(ProviderError(.cannotSynchronize, "x").disposition == .skipItem)
    }
}
