/// A number of bytes, as written in sizes such as `"16MiB"`, `"4KiB"` or `"16MB"`.
public struct ByteCount: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The number of bytes; never negative.
    public var bytes: Int64

    /// Creates a byte count.
    public init(_ bytes: Int64) {
        self.bytes = bytes
    }

    /// The units a size may be written in, with their multipliers.
    static let units: [(name: String, multiplier: Int64)] = [
        ("B", 1),
        ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40),
        ("kB", 1_000), ("KB", 1_000), ("MB", 1_000_000), ("GB", 1_000_000_000), ("TB", 1_000_000_000_000),
    ]

    /// Parses `<digits><unit>` (unit as in ``units``) or plain digits (bytes);
    /// `nil` for anything else, including negative numbers, fractions and
    /// values that do not fit in 63 bits.
    public init?(parsing text: String) {
        let digits = text.prefix { $0.isASCII && $0.isNumber }
        let unit = text.dropFirst(digits.count)
        guard !digits.isEmpty, digits.count <= 19, let number = Int64(digits) else { return nil }
        let multiplier: Int64
        if unit.isEmpty {
            multiplier = 1
        } else if let match = Self.units.first(where: { $0.name == unit }) {
            multiplier = match.multiplier
        } else {
            return nil
        }
        let (product, overflow) = number.multipliedReportingOverflow(by: multiplier)
        guard !overflow else { return nil }
        self.bytes = product
    }

    /// Whether this is a power of two (and not zero).
    public var isPowerOfTwo: Bool { bytes > 0 && bytes & (bytes - 1) == 0 }

    /// The shortest exact binary spelling: `"1MiB"`, `"4KiB"`, `"1000B"`.
    public var description: String {
        for (name, multiplier) in [("TiB", Int64(1) << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)]
        where bytes >= multiplier && bytes % multiplier == 0 {
            return "\(bytes / multiplier)\(name)"
        }
        return "\(bytes)B"
    }

    /// Orders by number of bytes.
    public static func < (lhs: ByteCount, rhs: ByteCount) -> Bool { lhs.bytes < rhs.bytes }
}

/// Parses durations written as `<number><unit>`, several parts allowed: `"30s"`, `"1h30m"`, `"250ms"`.
enum DurationSyntax {
    /// The units, in milliseconds.
    static let units: [String: Int64] = ["ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000]

    /// The duration, or `nil` when `text` is not whole numbers each followed by
    /// a unit (`ms`, `s`, `m`, `h`, `d`), or is too long to represent.
    static func parse(_ text: String) -> Duration? {
        var rest = Substring(text)
        var total: Int64 = 0
        guard !rest.isEmpty else { return nil }
        while !rest.isEmpty {
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            rest = rest.dropFirst(digits.count)
            let unit = rest.prefix { $0.isASCII && $0.isLetter }
            rest = rest.dropFirst(unit.count)
            guard !digits.isEmpty, digits.count <= 15, let number = Int64(digits),
                  let scale = units[String(unit)] else { return nil }
            let (part, overflow) = number.multipliedReportingOverflow(by: scale)
            let (sum, overflowSum) = total.addingReportingOverflow(part)
            guard !overflow, !overflowSum else { return nil }
            total = sum
        }
        return .milliseconds(total)
    }
}
