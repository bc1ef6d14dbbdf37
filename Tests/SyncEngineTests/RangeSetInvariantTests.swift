import SyncModel
import Testing
import TestSupport

/// `RangeSet` (a placeholder's hydrated bytes) against a brute-force model, a set of byte
/// offsets, over random inserts and removes: after every step the ranges are sorted,
/// disjoint, not touching and not empty, and membership, `contains`, `missing(in:)` and
/// `byteCount` say what the model says. A failure names its seed and step to replay.
@Suite struct RangeSetInvariantTests {
    /// Offsets stay below this, so ranges often overlap, touch and split each other.
    static let universe = 160

    static func randomRange(_ random: inout SeededRandom) -> ByteRange {
        let offset = random.next(universe)
        // Empty ranges too: they change nothing.
        return ByteRange(offset: Int64(offset), length: Int64(random.next(min(40, universe - offset + 1))))
    }

    /// The model's holes in `range`, as ranges in order.
    static func holes(_ model: Set<Int64>, in range: ByteRange) -> [ByteRange] {
        var result: [ByteRange] = []
        var start: Int64?
        for offset in range.offset..<range.end + 1 {
            let missing = offset < range.end && !model.contains(offset)
            if missing, start == nil { start = offset }
            if !missing, let begun = start {
                result.append(ByteRange(offset: begun, length: offset - begun))
                start = nil
            }
        }
        return result
    }

    static func check(_ set: RangeSet, against model: Set<Int64>, _ random: inout SeededRandom, at place: String) {
        let ranges = set.ranges
        #expect(ranges.allSatisfy { !$0.isEmpty }, "an empty range is kept, \(place)")
        #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.end < $1.offset }, "ranges touch or are out of order: \(ranges), \(place)")
        let members = Set(ranges.flatMap { $0.offset..<$0.end })
        #expect(members == model, "the set holds \(ranges), \(place)")
        #expect(set.byteCount == Int64(model.count), "byteCount, \(place)")
        for _ in 0..<4 {
            let probe = randomRange(&random)
            #expect(set.missing(in: probe) == holes(model, in: probe), "missing(in: \(probe)) of \(ranges), \(place)")
            let whole = (probe.offset..<probe.end).allSatisfy(model.contains)
            #expect(set.contains(probe) == whole, "contains(\(probe)) of \(ranges), \(place)")
        }
    }

    @Test("inserts and removes keep the set normalised and equal to the byte model", arguments: [1, 2, 3, 42, 31337, 20261127] as [UInt64])
    func randomInsertsAndRemovesMatchTheModel(seed: UInt64) {
        var random = SeededRandom(spreading: seed)
        var set = RangeSet()
        var model = Set<Int64>()
        for step in 0..<400 {
            let range = Self.randomRange(&random)
            // Inserts a little more often than removes, so the set neither stays empty nor full.
            if random.next(5) < 3 {
                set.insert(range)
                model.formUnion(range.offset..<range.end)
            } else {
                set.remove(range)
                model.subtract(range.offset..<range.end)
            }
            Self.check(set, against: model, &random, at: "seed \(seed) step \(step)")
        }
    }

    @Test("removing splits a range it falls inside and trims the ranges it overlaps")
    func removeSplitsAndTrims() {
        func r(_ offset: Int64, _ length: Int64) -> ByteRange { ByteRange(offset: offset, length: length) }
        var set = RangeSet([r(0, 100), r(200, 50)])
        set.remove(r(10, 20))
        #expect(set.ranges == [r(0, 10), r(30, 70), r(200, 50)])
        set.remove(r(90, 120))
        #expect(set.ranges == [r(0, 10), r(30, 60), r(210, 40)])
        set.remove(r(5, 0))
        #expect(set.ranges == [r(0, 10), r(30, 60), r(210, 40)])
        set.remove(r(0, 1000))
        #expect(set.ranges.isEmpty)
    }
}
