import Foundation
import SyncEngine
import Testing

/// Names that differ only in Unicode normalisation: which new remote item is renamed, and to what.
@Suite("Unicode normalisation clashes")
struct NormalisationClashTests {
    static let nfc = "caf\u{00E9}.txt", nfd = "cafe\u{0301}.txt"

    static func p(_ text: String) -> RemotePath { try! RemotePath(string: text) }

    static func remote(_ paths: String...) -> [RemotePath: RemoteEntry] {
        Dictionary(uniqueKeysWithValues: paths.map { (p($0), RemoteEntry(path: p($0), kind: .file, size: 1, etag: ETag(value: $0))) })
    }

    @Test("the test's premise: Swift calls the two names equal, paths do not")
    func premise() {
        #expect(Self.nfc == Self.nfd)
        #expect(Self.p(Self.nfc) != Self.p(Self.nfd))
    }

    @Test("both new on the server: the NFD one is renamed with the marker, the NFC one keeps its name")
    func bothNew() {
        let renames = NormalisationClash.renames(remote: Self.remote(Self.nfc, Self.nfd), local: [], recorded: [])
        #expect(renames.count == 1)
        #expect(Array(renames.first!.from.name.utf8) == Array(Self.nfd.utf8))
        #expect(Array(renames.first!.to.name.utf8) == Array("cafe\u{0301} (unicode conflict).txt".utf8))
    }

    @Test("a new NFC name beside a synced NFD one: the new one is renamed, whatever its form")
    func newBesideRecorded() {
        let renames = NormalisationClash.renames(remote: Self.remote(Self.nfc, Self.nfd), local: [Self.p(Self.nfd)],
                                                 recorded: [Self.p(Self.nfd)])
        #expect(renames.map { Array($0.from.name.utf8) } == [Array(Self.nfc.utf8)])
    }

    @Test("a new server name beside a local-only file of the other form is renamed")
    func newBesideLocal() {
        let renames = NormalisationClash.renames(remote: Self.remote(Self.nfd), local: [Self.p(Self.nfc)], recorded: [])
        #expect(renames.map { Array($0.from.name.utf8) } == [Array(Self.nfd.utf8)])
    }

    @Test("one name, or names that only look alike, or the same name on both sides: nothing to rename")
    func noClash() {
        #expect(NormalisationClash.renames(remote: Self.remote(Self.nfd), local: [], recorded: []).isEmpty)
        #expect(NormalisationClash.renames(remote: Self.remote(Self.nfd), local: [Self.p(Self.nfd)], recorded: [Self.p(Self.nfd)]).isEmpty)
        #expect(NormalisationClash.renames(remote: Self.remote("cafe.txt", Self.nfc), local: [], recorded: []).isEmpty)
        #expect(NormalisationClash.renames(remote: Self.remote("d/\(Self.nfc)", Self.nfd), local: [], recorded: []).isEmpty,
                "different folders")
    }

    @Test("a taken marker name gets a counter, also when it is taken only in another form")
    func counter() {
        let taken = "cafe\u{0301} (unicode conflict).txt"
        let renames = NormalisationClash.renames(remote: Self.remote(Self.nfc, Self.nfd, "caf\u{00E9} (unicode conflict).txt"),
                                                 local: [], recorded: [])
        #expect(renames.count == 1)
        #expect(renames.first!.to.name != taken)
        #expect(Array(renames.first!.to.name.utf8) == Array("cafe\u{0301} (unicode conflict 2).txt".utf8))
    }

    @Test("three forms of one folder name: two renamed, the folder's contents first")
    func folders() {
        let composed = "\u{00C5}", decomposed = "A\u{030A}", angstrom = "\u{212B}"  // Å three ways
        var remote = Self.remote("\(decomposed)/inner/\(Self.nfc)", "\(decomposed)/inner/\(Self.nfd)")
        for name in [composed, decomposed, angstrom, "\(decomposed)/inner"] {
            remote[Self.p(name)] = RemoteEntry(path: Self.p(name), kind: .folder, size: 0, etag: nil)
        }
        let renames = NormalisationClash.renames(remote: remote, local: [], recorded: [])
        #expect(renames.count == 3)
        #expect(renames.first!.from.components.count == 3, "deepest first")
        #expect(Set(renames.dropFirst().map { Array($0.from.name.utf8) }) == [Array(decomposed.utf8), Array(angstrom.utf8)])
    }

    @Test("marked names parse back to the name they were made from")
    func parse() {
        #expect(UnicodeConflictName.make(for: "notes", taken: []) == "notes (unicode conflict)")
        #expect(UnicodeConflictName.parse("caf\u{00E9} (unicode conflict).txt") == "caf\u{00E9}.txt")
        #expect(UnicodeConflictName.parse("a (unicode conflict 3).txt") == "a.txt")
        #expect(UnicodeConflictName.parse("a (unicode conflict x).txt") == nil)
        #expect(UnicodeConflictName.parse("a (unicode conflict 1).txt") == nil)
        #expect(UnicodeConflictName.parse("plain.txt") == nil)
    }
}
