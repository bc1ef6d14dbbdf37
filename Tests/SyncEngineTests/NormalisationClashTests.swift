import Foundation
import SyncEngine
import Testing

/// Names that differ only in Unicode normalisation: which sibling paths are found as twins.
@Suite("Unicode normalisation twins (pure)")
struct NormalisationClashTests {
    static let nfc = "caf\u{00E9}.txt", nfd = "cafe\u{0301}.txt"

    static func p(_ text: String) -> RemotePath { try! RemotePath(string: text) }

    @Test("the test's premise: Swift calls the two names equal, paths do not")
    func premise() {
        #expect(Self.nfc == Self.nfd)
        #expect(Self.p(Self.nfc) != Self.p(Self.nfd))
    }

    @Test("two siblings that differ only in normalisation are one pair, in byte order")
    func pair() {
        let twins = NormalisationClash.twins(among: [Self.p(Self.nfd), Self.p(Self.nfc), Self.p("other.txt")])
        #expect(twins.count == 1)
        #expect(twins.first?.map { Array($0.name.utf8) } == [Array(Self.nfd.utf8), Array(Self.nfc.utf8)].sorted { $0.lexicographicallyPrecedes($1) })
    }

    @Test("a path seen on several sides counts once; one name alone, ASCII names and names in other folders are no twins")
    func noTwins() {
        #expect(NormalisationClash.twins(among: [Self.p(Self.nfd), Self.p(Self.nfd)]).isEmpty)
        #expect(NormalisationClash.twins(among: [Self.p("cafe.txt"), Self.p(Self.nfc)]).isEmpty)
        #expect(NormalisationClash.twins(among: [Self.p("d/\(Self.nfc)"), Self.p(Self.nfd)]).isEmpty)
        #expect(NormalisationClash.twins(among: [Self.p("a.txt"), Self.p("A.txt")]).isEmpty)
    }

    @Test("twins inside twin folders are found per folder; three forms make one group")
    func nested() {
        let folderNFC = "r\u{00E9}sum\u{00E9}", folderNFD = "re\u{0301}sume\u{0301}"
        let paths = [folderNFC, folderNFD, "\(folderNFD)/\(Self.nfc)", "\(folderNFD)/\(Self.nfd)",
                     "\(folderNFC)/\(Self.nfc)"].map(Self.p)
        let twins = NormalisationClash.twins(among: paths)
        #expect(twins.count == 2, "\(twins)")
        #expect(twins.contains { Set($0) == [Self.p(folderNFC), Self.p(folderNFD)] })
        #expect(twins.contains { Set($0) == [Self.p("\(folderNFD)/\(Self.nfc)"), Self.p("\(folderNFD)/\(Self.nfd)")] })
        let three = NormalisationClash.twins(among: ["\u{212B}.txt", "\u{00C5}.txt", "A\u{030A}.txt"].map(Self.p))
        #expect(three.count == 1 && three.first?.count == 3)
    }

    @Test("folders holding only names below U+0300 are passed over; twins beside them, and Hangul, are still found")
    func quickCheck() {
        let latin = ["\u{00DC}bersicht.txt", "caf\u{00E9}.md", "na\u{00EF}ve", "\u{01C4}.txt"].map { Self.p("top/\($0)") }
        #expect(NormalisationClash.twins(among: latin).isEmpty)
        let hangulNFC = "\u{D55C}.txt", hangulNFD = "\u{1112}\u{1161}\u{11AB}.txt"
        #expect(hangulNFC == hangulNFD)
        let twins = NormalisationClash.twins(among: latin + [Self.p("top/\(Self.nfc)"), Self.p("top/\(Self.nfd)"),
                                                            Self.p("k/\(hangulNFD)"), Self.p("k/\(hangulNFC)")])
        #expect(twins.count == 2, "\(twins)")
        #expect(twins.contains { Set($0) == [Self.p("top/\(Self.nfc)"), Self.p("top/\(Self.nfd)")] })
        #expect(twins.contains { Set($0) == [Self.p("k/\(hangulNFC)"), Self.p("k/\(hangulNFD)")] })
    }
}
