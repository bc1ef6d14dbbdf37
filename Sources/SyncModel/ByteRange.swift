/// A half-open range of bytes `[offset, offset + length)` in a file.
public struct ByteRange: Hashable, Sendable, Codable, CustomStringConvertible {
    public let offset: Int64
    public let length: Int64

    /// A range; `offset` and `length` must not be negative.
    public init(offset: Int64, length: Int64) {
        precondition(offset >= 0 && length >= 0, "ByteRange needs offset >= 0 and length >= 0")
        self.offset = offset
        self.length = length
    }

    /// One past the last byte.
    public var end: Int64 { offset + length }
    public var isEmpty: Bool { length == 0 }

    /// This range widened to multiples of `alignment` (a power of two) and clamped to
    /// `fileSize`: what `fetchPartialContents` must at least deliver.
    public func aligned(to alignment: Int64, fileSize: Int64) -> ByteRange {
        precondition(alignment > 0 && alignment & (alignment - 1) == 0, "alignment must be a power of two")
        let start = offset & ~(alignment - 1)
        let rawEnd = end == offset ? offset + 1 : end
        let alignedEnd = (rawEnd + alignment - 1) & ~(alignment - 1)
        let clampedEnd = min(alignedEnd, fileSize)
        return ByteRange(offset: min(start, clampedEnd), length: max(0, clampedEnd - min(start, clampedEnd)))
    }

    /// The HTTP `Range` header value for this range, e.g. `bytes=0-99`; nil when empty.
    public var httpRangeHeader: String? {
        isEmpty ? nil : "bytes=\(offset)-\(end - 1)"
    }

    public var description: String { "[\(offset), \(end))" }
}

/// A set of bytes kept as sorted, disjoint, non-adjacent ranges: the hydrated
/// parts of a partial file.
public struct RangeSet: Hashable, Sendable, Codable {
    /// Sorted by offset; no two touch or overlap; none empty.
    public private(set) var ranges: [ByteRange] = []

    public init() {}
    public init(_ ranges: [ByteRange]) { for r in ranges { insert(r) } }

    /// Adds `range`, merging with any range it touches.
    public mutating func insert(_ range: ByteRange) {
        guard !range.isEmpty else { return }
        var start = range.offset, end = range.end
        var kept: [ByteRange] = []
        for r in ranges {
            if r.end < start || r.offset > end { kept.append(r) } else {
                start = min(start, r.offset)
                end = max(end, r.end)
            }
        }
        kept.append(ByteRange(offset: start, length: end - start))
        ranges = kept.sorted { $0.offset < $1.offset }
    }

    /// Takes the bytes of `range` out of the set, splitting a range it falls inside.
    public mutating func remove(_ range: ByteRange) {
        guard !range.isEmpty else { return }
        var kept: [ByteRange] = []
        for r in ranges {
            if r.end <= range.offset || r.offset >= range.end {
                kept.append(r)
                continue
            }
            if r.offset < range.offset { kept.append(ByteRange(offset: r.offset, length: range.offset - r.offset)) }
            if r.end > range.end { kept.append(ByteRange(offset: range.end, length: r.end - range.end)) }
        }
        ranges = kept
    }

    /// True when every byte of `range` is in the set.
    public func contains(_ range: ByteRange) -> Bool {
        if range.isEmpty { return true }
        return ranges.contains { $0.offset <= range.offset && $0.end >= range.end }
    }

    /// The parts of `range` not in the set, in order.
    public func missing(in range: ByteRange) -> [ByteRange] {
        var result: [ByteRange] = []
        var cursor = range.offset
        for r in ranges where r.end > cursor && r.offset < range.end {
            if r.offset > cursor { result.append(ByteRange(offset: cursor, length: r.offset - cursor)) }
            cursor = max(cursor, r.end)
        }
        if cursor < range.end { result.append(ByteRange(offset: cursor, length: range.end - cursor)) }
        return result
    }

    /// The number of bytes in the set.
    public var byteCount: Int64 { ranges.reduce(0) { $0 + $1.length } }
}
