/// A small deterministic random generator (SplitMix64), so a failing seed can be replayed:
/// the same seed gives the same numbers on every machine and every run.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    /// The generator's whole state; the next number is derived from it alone.
    public var state: UInt64

    /// Starts from `seed` as it is.
    public init(seed: UInt64) { state = seed }

    /// Starts from `seed` spread over all 64 bits (never zero), for small seeds such as a
    /// test's run number.
    public init(spreading seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in 0..<bound (0 when `bound` is 0 or less).
    public mutating func next(_ bound: Int) -> Int { Int(next() % UInt64(max(1, bound))) }

    /// One of `items`, or nil when there is none.
    public mutating func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[next(items.count)] }
}
