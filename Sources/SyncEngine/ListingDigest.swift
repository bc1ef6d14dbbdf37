import Foundation

/// A SHA-256 over a remote listing as the store gave it: every entry's path, kind, size,
/// version, file id, mtime, link target and checksums, in listed order. Equal digests mean
/// the store listed the same entries with the same versions (an order that changes only
/// costs a comparison with the rows). Each field is length-prefixed and the count of
/// entries ends it, so no two listings feed the same bytes.
public struct ListingDigest: Hashable, Sendable, CustomStringConvertible {
    public let hex: String

    /// `context`: what else decides how a listing compares with the rows (the exclude
    /// patterns, the bundle rule), so that a listing under another context never matches.
    public init(_ listing: RemoteListing, context: String = "") {
        var builder = Builder(context: context)
        builder.add(listing.entries)
        self = builder.finish()
    }

    init(hex: String) {
        self.hex = hex
    }

    /// A digest fed with a listing's entries as a walk hands them over, in listed order:
    /// the same digest as of the whole listing, without keeping it. The count of entries
    /// goes last, so that the first entries need not wait for it.
    public struct Builder {
        var digest = ContentDigest(.sha256)
        var bytes: [UInt8] = []
        var count: Int64 = 0

        public init(context: String = "") {
            bytes.reserveCapacity(1 << 16 + 1024)
            field(Self.format)
            field(context)
        }

        /// Changed whenever what a digest covers changes: a digest kept by an older tidesync
        /// then matches no listing.
        static let format = "listing-digest-1"

        public mutating func add(_ entries: [RemoteEntry]) {
            for entry in entries { add(entry) }
        }

        mutating func add(_ entry: RemoteEntry) {
            if bytes.count >= 1 << 16 {  // fed in large pieces: a small update costs more than its bytes
                digest.update(bytes)
                bytes.removeAll(keepingCapacity: true)
            }
            count += 1
            integer(Int64(entry.path.components.count))
            for component in entry.path.components { field(component) }
            field(entry.kind.rawValue)
            integer(entry.size)
            field(entry.etag.map { ($0.isWeak ? "W/" : "") + $0.value })
            field(entry.fileID)
            // The bits of the Double: any date a server sends (year 1 or 9999) fits.
            integer(entry.modificationDate.map { Int64(bitPattern: $0.timeIntervalSince1970.bitPattern) } ?? Int64.min)
            field(entry.symlinkTarget)
            field(entry.checksums)
        }

        public mutating func finish() -> ListingDigest {
            integer(count)
            digest.update(bytes)
            bytes.removeAll()
            return ListingDigest(hex: digest.hex())
        }

        private mutating func field(_ text: String?) {
            guard let text else { return integer(-1) }
            integer(Int64(text.utf8.count))
            bytes.append(contentsOf: text.utf8)
        }

        private mutating func integer(_ value: Int64) {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }
    }

    public var description: String { String(hex.prefix(16)) }
}
