@_exported import ContentHash

/// A content checksum a server offers with its listing, such as Nextcloud's and
/// ownCloud's `oc:checksums` (`SHA1:3ee9… MD5:d70b… ADLER32:8ae90960`). Two versions
/// of one size whose checksums agree are the same bytes: not a conflict, and no download
/// is needed to find out.
public struct ContentChecksum: Hashable, Sendable {
    public typealias Algorithm = DigestAlgorithm

    /// The algorithms a server's checksum is taken in, strongest first.
    public static let offered: [Algorithm] = [.sha1, .md5, .adler32]

    public var algorithm: Algorithm
    /// The digest in lowercase hex.
    public var hex: String

    public init(algorithm: Algorithm, hex: String) {
        self.algorithm = algorithm
        self.hex = hex.lowercased()
    }

    /// The checksums in a server's list (`ALGO:hex`, separated by spaces or commas) that
    /// the engine can compute, strongest first; unknown algorithms and malformed entries
    /// are left out.
    public static func parse(_ text: String) -> [ContentChecksum] {
        let found = text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\n" || $0 == "\t" }).compactMap {
            entry -> ContentChecksum? in
            let parts = entry.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let algorithm = Algorithm(rawValue: parts[0].uppercased()), offered.contains(algorithm),
                  !parts[1].isEmpty, parts[1].allSatisfy(\.isHexDigit) else { return nil }
            return ContentChecksum(algorithm: algorithm, hex: String(parts[1]))
        }
        return offered.compactMap { algorithm in found.first { $0.algorithm == algorithm } }
    }
}
