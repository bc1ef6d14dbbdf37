#if canImport(Glibc)
import Glibc
#endif

/// A path below a store's root, as a list of names. The empty path is the root.
///
/// Names are kept exactly as the server or disk gave them: no Unicode
/// normalisation, so `é` in NFC and in NFD are two different names.
public struct RemotePath: Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
    /// The names from the root down; never contains "", "." or "..".
    public let components: [String]

    /// The store's root folder.
    public static let root = RemotePath(validated: [])

    init(validated components: [String]) { self.components = components }

    /// Builds a path from names, rejecting empty names, `.`, `..`, names with `/`
    /// or NUL, and names over 255 bytes (the Linux limit).
    public init(_ components: [String]) throws(ProviderError) {
        for name in components { try RemotePath.validate(name: name) }
        self.init(validated: components)
    }

    /// Parses `a/b/c` (leading and trailing slashes ignored).
    public init(string: String) throws(ProviderError) {
        try self.init(string.split(separator: "/", omittingEmptySubsequences: true).map(String.init))
    }

    /// Throws `cannotSynchronize` with a message saying what is wrong with `name`.
    public static func validate(name: String) throws(ProviderError) {
        let problem: String? = if name.isEmpty { "an empty name" }
            else if name == "." || name == ".." { "the name \"\(name)\"" }
            else if name.utf8.contains(0x2F) { "a name containing \"/\"" }
            else if name.utf8.contains(0) { "a name containing a NUL byte" }
            else if name.utf8.count > 255 { "a name of \(name.utf8.count) bytes (Linux allows 255)" }
            else { nil }
        if let problem {
            throw ProviderError(.cannotSynchronize, "cannot use \(problem) as a file name")
        }
    }

    public var isRoot: Bool { components.isEmpty }
    /// The last name; "" for the root.
    public var name: String { components.last ?? "" }
    /// The containing folder; the root is its own parent.
    public var parent: RemotePath { RemotePath(validated: Array(components.dropLast())) }

    /// This path with `name` appended.
    public func appending(_ name: String) throws(ProviderError) -> RemotePath {
        try RemotePath.validate(name: name)
        return RemotePath(validated: components + [name])
    }

    /// True when `self` is `other` or lies below it.
    public func isDescendant(of other: RemotePath) -> Bool {
        components.count >= other.components.count
            && RemotePath(validated: Array(components.prefix(other.components.count))) == other
    }

    /// This path with its leading `old` (which it must lie at or below) replaced by `new`,
    /// for the items below a folder that moved; nil when it does not lie below `old`.
    public func replacingPrefix(_ old: RemotePath, with new: RemotePath) -> RemotePath? {
        guard isDescendant(of: old) else { return nil }
        return RemotePath(validated: new.components + components.dropFirst(old.components.count))
    }

    /// `a/b/c`; "" for the root.
    public var description: String { components.joined(separator: "/") }

    // Swift's String == treats canonically equivalent strings (NFC "é" and NFD "e\u{301}")
    // as equal; file systems and servers do not, so paths compare and hash by bytes.
    public static func == (lhs: RemotePath, rhs: RemotePath) -> Bool {
        lhs.components.count == rhs.components.count
            && zip(lhs.components, rhs.components).allSatisfy { RemotePath.sameBytes($0, $1) }
    }

    /// True when `a` and `b` hold the same UTF-8 bytes (a memcmp for native strings).
    static func sameBytes(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        var a = a, b = b
        return a.withUTF8 { x in b.withUTF8 { y in x.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 } }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(components.count)
        for var name in components {
            name.withUTF8 { bytes in
                hasher.combine(bytes.count)
                hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
            }
        }
    }

    public static func < (lhs: RemotePath, rhs: RemotePath) -> Bool {
        lhs.components.lexicographicallyPrecedes(rhs.components) { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
}
