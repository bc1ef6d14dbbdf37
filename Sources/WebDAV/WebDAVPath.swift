import SyncEngine

/// Turns `RemotePath`s into request paths below the server's base path and hrefs of
/// multistatus answers back into `RemotePath`s.
struct WebDAVPath: Sendable {
    /// The base URL's path, percent-encoded as the user wrote it, ending in "/".
    let basePath: String
    /// The base path's names, decoded.
    let baseComponents: [String]

    init(basePath: String) {
        let withSlash = basePath.hasSuffix("/") ? basePath : basePath + "/"
        self.basePath = withSlash.hasPrefix("/") ? withSlash : "/" + withSlash
        baseComponents = self.basePath.split(separator: "/").compactMap { Self.percentDecode($0) }
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
        var text = Substring(href)
        if let scheme = text.range(of: "://") {
            let afterScheme = text[scheme.upperBound...]
            guard let slash = afterScheme.firstIndex(of: "/") else { return nil }
            text = afterScheme[slash...]
        }
        if let query = text.firstIndex(where: { $0 == "?" || $0 == "#" }) { text = text[..<query] }
        var names: [String] = []
        for raw in text.split(separator: "/") {
            guard let name = Self.percentDecode(raw) else { return nil }
            names.append(name)
        }
        guard names.count >= baseComponents.count,
              Array(names.prefix(baseComponents.count)) == baseComponents else { return nil }
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

    /// Decodes `%XX` escapes; nil for a malformed escape or bytes that are not UTF-8.
    static func percentDecode<S: StringProtocol>(_ text: S) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else { bytes.append(byte); continue }
            guard let high = iterator.next(), let low = iterator.next(),
                  let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(value)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
