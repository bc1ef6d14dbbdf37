import SyncEngine

/// Turns `RemotePath`s into request paths below the server's base path and hrefs of
/// multistatus answers back into `RemotePath`s. Everything is split and compared on
/// UTF-8 bytes: Swift's `Character` and `String ==` would merge a "/" with a following
/// combining mark, or an NFC name with its NFD twin.
struct WebDAVPath: Sendable {
    /// The base URL's path, re-encoded from its decoded names, ending in "/".
    let basePath: String
    /// The base path's names, decoded.
    let baseComponents: [String]

    /// `encodedBasePath` is the URL's path as written (percent-encoded). Fails when one
    /// of its names has a malformed escape or is not UTF-8.
    init(encodedBasePath: String) throws(ProviderError) {
        var names: [String] = []
        for raw in Self.splitOnSlash(encodedBasePath) {
            guard let name = Self.percentDecode(raw), !name.utf8.contains(0x2F) else {
                throw ProviderError(.cannotSynchronize, "the remote URL's path \(encodedBasePath) has a malformed %-escape")
            }
            names.append(name)
        }
        baseComponents = names
        basePath = "/" + names.map { Self.percentEncode($0) + "/" }.joined()
    }

    /// The request path for `path`; folders get a trailing slash.
    func requestPath(_ path: RemotePath, isFolder: Bool = false) -> String {
        if path.isRoot { return basePath }
        let encoded = basePath + path.components.map(Self.percentEncode).joined(separator: "/")
        return isFolder ? encoded + "/" : encoded
    }

    /// The `RemotePath` an href names, or nil when it lies outside the base path or
    /// holds a name that cannot be a file name (a hostile or broken server).
    func remotePath(href: String) -> RemotePath? {
        var bytes = Array(href.utf8)
        if let scheme = Self.find(Array("://".utf8), in: bytes) {
            guard let slash = bytes[(scheme + 3)...].firstIndex(of: 0x2F) else { return nil }
            bytes = Array(bytes[slash...])
        }
        if let end = bytes.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
            bytes = Array(bytes[..<end])
        }
        var names: [String] = []
        for raw in bytes.split(separator: 0x2F) {
            guard let name = Self.percentDecode(raw) else { return nil }
            names.append(name)
        }
        guard names.count >= baseComponents.count,
              zip(names, baseComponents).allSatisfy({ $0.utf8.elementsEqual($1.utf8) }) else { return nil }
        return try? RemotePath(Array(names.dropFirst(baseComponents.count)))
    }

    static let unreserved: Set<UInt8> = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)

    /// Percent-encodes every byte of `name` but the RFC 3986 unreserved characters.
    static func percentEncode(_ name: String) -> String {
        var out = ""
        out.reserveCapacity(name.utf8.count)
        for byte in name.utf8 {
            if unreserved.contains(byte) { out.unicodeScalars.append(Unicode.Scalar(byte)) } else {
                out += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return out
    }

    static func splitOnSlash(_ text: String) -> [ArraySlice<UInt8>] {
        Array(text.utf8).split(separator: 0x2F)
    }

    /// Decodes `%XX` escapes (either case); nil for a malformed escape or bytes that are not UTF-8.
    static func percentDecode<C: Collection>(_ raw: C) -> String? where C.Element == UInt8 {
        var bytes: [UInt8] = []
        var iterator = raw.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else { bytes.append(byte); continue }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    static func percentDecode<S: StringProtocol>(_ text: S) -> String? { percentDecode(Array(text.utf8)) }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        return (0...(haystack.count - needle.count)).first { haystack[$0..<$0 + needle.count].elementsEqual(needle) }
    }
}
