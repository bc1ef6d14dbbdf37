import Foundation

/// A SHA-256 over a remote listing as the store gave it: every entry's path, kind, size,
/// version, file id, mtime, link target and checksums, in listed order. Equal digests mean
/// the store listed the same entries with the same versions (an order that changes only
/// costs a comparison with the rows). Each field is length-prefixed, so no two listings
/// feed the same bytes.
public struct ListingDigest: Hashable, Sendable, CustomStringConvertible {
    public let hex: String

    public init(_ listing: RemoteListing) {
        var digest = ContentDigest(.sha256)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(1 << 16 + 1024)
        func field(_ text: String?) {
            guard let text else { return integer(-1) }
            integer(Int64(text.utf8.count))
            bytes.append(contentsOf: text.utf8)
        }
        func integer(_ value: Int64) {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }
        integer(Int64(listing.entries.count))
        for entry in listing.entries {
            if bytes.count >= 1 << 16 {  // fed in large pieces: a small update costs more than its bytes
                digest.update(bytes)
                bytes.removeAll(keepingCapacity: true)
            }
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
        digest.update(bytes)
        hex = digest.hex()
    }

    public var description: String { String(hex.prefix(16)) }
}
