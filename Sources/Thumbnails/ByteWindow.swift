// Reading a file's first bytes when the rest is on the server. Pure.

/// Why a parse over a `ByteWindow` stopped.
enum ParseStop: Error, Equatable {
    /// The structure goes on past the bytes at hand: the file's first `end` bytes are needed.
    case needMore(end: Int)
    /// The structure is broken: an offset past the end of the file, a count out of reason.
    case invalid
}

/// The first bytes of a file of `fileSize` bytes. Every read is bounds-checked with
/// overflow-safe arithmetic against both the file and the bytes at hand.
struct ByteWindow {
    let bytes: [UInt8]
    let fileSize: Int

    init(_ prefix: [UInt8], fileSize: Int) {
        self.fileSize = max(0, fileSize)
        bytes = prefix.count > self.fileSize ? Array(prefix.prefix(self.fileSize)) : prefix
    }

    /// Checks that `count` bytes at `offset` lie in the file and are at hand.
    func require(_ offset: Int, _ count: Int) throws(ParseStop) {
        guard offset >= 0, count >= 0 else { throw .invalid }
        let (end, overflow) = offset.addingReportingOverflow(count)
        guard !overflow, end <= fileSize else { throw .invalid }
        guard end <= bytes.count else { throw .needMore(end: end) }
    }

    /// Whether `count` bytes at `offset` lie in the file (at hand or not).
    func inFile(_ offset: Int, _ count: Int) -> Bool {
        guard offset >= 0, count >= 0 else { return false }
        let (end, overflow) = offset.addingReportingOverflow(count)
        return !overflow && end <= fileSize
    }

    func byte(_ offset: Int) throws(ParseStop) -> Int {
        try require(offset, 1)
        return Int(bytes[offset])
    }

    /// An unsigned 16-bit number at `offset`.
    func uint16(_ offset: Int, bigEndian: Bool) throws(ParseStop) -> Int {
        try require(offset, 2)
        let first = Int(bytes[offset]), second = Int(bytes[offset + 1])
        return bigEndian ? first << 8 | second : second << 8 | first
    }

    /// An unsigned 32-bit number at `offset`.
    func uint32(_ offset: Int, bigEndian: Bool) throws(ParseStop) -> Int {
        try require(offset, 4)
        let word = (0..<4).reduce(0) { value, index in
            value << 8 | Int(bytes[offset + (bigEndian ? index : 3 - index)])
        }
        return word
    }

    /// Whether the bytes at `offset` are `expected`; false when they are not at hand.
    func matches(_ offset: Int, _ expected: [UInt8]) -> Bool {
        guard (try? require(offset, expected.count)) != nil else { return false }
        return bytes[offset..<offset + expected.count].elementsEqual(expected)
    }
}
