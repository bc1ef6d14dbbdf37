/// An HTTP entity tag as a server sent it: the opaque value and whether it was weak (`W/"…"`).
///
/// Apache's mod_dav_fs sends a weak tag for one second after a change and answers
/// `If-Match` with it by 412 even though nothing changed; the same value later comes
/// back strong. `sameValue(as:)` compares values ignoring weakness, which is how a
/// client tells "still the version I based my change on" from a real change.
public struct ETag: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The opaque tag without quotes and without the `W/` prefix.
    public let value: String
    /// True when the server marked the tag weak.
    public let isWeak: Bool

    public init(value: String, isWeak: Bool = false) {
        self.value = value
        self.isWeak = isWeak
    }

    /// Parses a header or `getetag` value such as `"abc"`, `W/"abc"` or a bare `abc`.
    /// Returns nil for an empty or blank value.
    public init?(header: String) {
        var text = Substring(header.trimmingWhitespace())
        var weak = false
        if text.hasPrefix("W/") || text.hasPrefix("w/") {
            weak = true
            text = text.dropFirst(2)
        }
        if text.count >= 2, text.first == "\"", text.last == "\"" {
            text = text.dropFirst().dropLast()
        }
        guard !text.isEmpty else { return nil }
        self.init(value: String(text), isWeak: weak)
    }

    /// The strong header form, `"value"`, as sent in `If-Match`.
    public var strongHeaderValue: String { "\"\(value)\"" }

    /// The header form as the server sent it.
    public var description: String { isWeak ? "W/\"\(value)\"" : "\"\(value)\"" }

    /// True when both tags name the same version, ignoring weakness.
    public func sameValue(as other: ETag) -> Bool { value == other.value }
}

extension StringProtocol {
    /// The string without leading and trailing spaces, tabs and line breaks.
    public func trimmingWhitespace() -> SubSequence {
        var start = startIndex, end = endIndex
        while start < end, self[start].isWhitespace { start = index(after: start) }
        while end > start, self[index(before: end)].isWhitespace { end = index(before: end) }
        return self[start..<end]
    }
}
