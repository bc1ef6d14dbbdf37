import SyncModel
import Testing

@Suite("Byte ranges and range sets")
struct RangeTests {
    static func r(_ offset: Int64, _ length: Int64) -> ByteRange { ByteRange(offset: offset, length: length) }

    @Test("a range inside one block widens to that block")
    func alignedInsideBlock() {
        #expect(Self.r(5, 10).aligned(to: 4096, fileSize: 100_000) == Self.r(0, 4096))
    }

    @Test("a range across a block boundary widens to both blocks")
    func alignedAcrossBoundary() {
        #expect(Self.r(4000, 200).aligned(to: 4096, fileSize: 100_000) == Self.r(0, 8192))
    }

    @Test("an aligned range stays as it is")
    func alreadyAligned() {
        #expect(Self.r(8192, 4096).aligned(to: 4096, fileSize: 100_000) == Self.r(8192, 4096))
    }

    @Test("the last block is clamped to the file's end")
    func clampedToEnd() {
        #expect(Self.r(9000, 10).aligned(to: 4096, fileSize: 10_000) == Self.r(8192, 1808))
    }

    @Test("an empty range still asks for the block it is in")
    func emptyRange() {
        #expect(Self.r(4096, 0).aligned(to: 4096, fileSize: 100_000) == Self.r(4096, 4096))
    }

    @Test("a range past the end becomes empty at the end")
    func pastTheEnd() {
        let aligned = Self.r(20_000, 10).aligned(to: 4096, fileSize: 10_000)
        #expect(aligned.isEmpty && aligned.offset == 10_000)
    }

    @Test("alignment 1 changes nothing inside the file")
    func alignmentOne() {
        #expect(Self.r(3, 7).aligned(to: 1, fileSize: 100) == Self.r(3, 7))
    }

    @Test("the HTTP Range header names the inclusive last byte; none for an empty range")
    func httpHeader() {
        #expect(Self.r(0, 100).httpRangeHeader == "bytes=0-99")
        #expect(Self.r(5, 0).httpRangeHeader == nil)
    }

    @Test("inserting keeps ranges sorted, merges overlapping and touching ones, ignores empty ones")
    func insertAndMerge() {
        var set = RangeSet()
        set.insert(Self.r(100, 10))
        set.insert(Self.r(0, 10))
        set.insert(Self.r(50, 0))
        #expect(set.ranges == [Self.r(0, 10), Self.r(100, 10)])
        set.insert(Self.r(10, 5))      // touches [0, 10)
        #expect(set.ranges == [Self.r(0, 15), Self.r(100, 10)])
        set.insert(Self.r(105, 20))    // overlaps [100, 110)
        #expect(set.ranges == [Self.r(0, 15), Self.r(100, 25)])
        set.insert(Self.r(12, 90))     // bridges both
        #expect(set.ranges == [Self.r(0, 125)])
        #expect(set.byteCount == 125)
    }

    @Test("a set built from unsorted, overlapping ranges is normalised")
    func initFromRanges() {
        let set = RangeSet([Self.r(30, 10), Self.r(0, 5), Self.r(3, 4), Self.r(40, 1)])
        #expect(set.ranges == [Self.r(0, 7), Self.r(30, 11)])
    }

    @Test("contains is true only when every byte is in one range")
    func contains() {
        let set = RangeSet([Self.r(0, 10), Self.r(20, 10)])
        #expect(set.contains(Self.r(2, 5)))
        #expect(set.contains(Self.r(20, 10)))
        #expect(set.contains(Self.r(15, 0)))
        #expect(!set.contains(Self.r(5, 20)))
        #expect(!set.contains(Self.r(25, 6)))
        #expect(!RangeSet().contains(Self.r(0, 1)))
    }

    @Test("missing lists the holes of a range, in order")
    func missing() {
        let set = RangeSet([Self.r(10, 10), Self.r(30, 10)])
        #expect(set.missing(in: Self.r(0, 50)) == [Self.r(0, 10), Self.r(20, 10), Self.r(40, 10)])
        #expect(set.missing(in: Self.r(12, 5)) == [])
        #expect(set.missing(in: Self.r(15, 20)) == [Self.r(20, 10)])
        #expect(RangeSet().missing(in: Self.r(3, 4)) == [Self.r(3, 4)])
    }
}
