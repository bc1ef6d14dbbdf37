import Foundation

/// Conflict-copy names as Nextcloud and Dropbox users know them:
/// `report (conflicted copy 2026-11-22 134501 laptop).pdf`.
public enum ConflictName {
    /// The parts of a conflict-copy name.
    public struct Parts: Hashable, Sendable {
        /// The name the copy was made of, e.g. `report.pdf`.
        public var baseName: String
        /// `YYYY-MM-DD HHMMSS`.
        public var timestamp: String
        public var host: String
        /// 1 for the first copy, 2, 3… when that name was taken.
        public var counter: Int

        /// The parts with every field given.
        public init(baseName: String, timestamp: String, host: String, counter: Int) {
            self.baseName = baseName
            self.timestamp = timestamp
            self.host = host
            self.counter = counter
        }
    }

    static let opening = " (conflicted copy "

    /// A conflict-copy name for `name`: the marker with `date` (in `timeZone`) and `host`
    /// inserted before the last extension (a leading dot is not one: `.bashrc`), with a
    /// counter ` 2`, ` 3`… when the name is in `taken`. The name of a conflict copy gives
    /// a copy of its base name, never a copy of a copy. The result is at most 255 bytes
    /// (the stem is shortened if needed) and holds no `/`.
    public static func make(for name: String, date: Date, host: String, timeZone: TimeZone = .current,
                            taken: Set<String>) -> String {
        let base = parse(name)?.baseName ?? name
        let (stem, suffix) = split(base)
        let label = "\(timestamp(date, timeZone)) \(sanitized(host))"
        var counter = 1
        while true {
            let tag = "\(opening)\(label)\(counter == 1 ? "" : " \(counter)"))\(suffix)"
            let candidate = fitted(stem, tag)
            if !taken.contains(candidate) { return candidate }
            counter += 1
        }
    }

    /// The parts of `name` when it is a conflict-copy name, else nil.
    public static func parse(_ name: String) -> Parts? {
        guard let open = name.range(of: opening, options: .backwards),
              let close = name[open.upperBound...].firstIndex(of: ")") else { return nil }
        let fields = name[open.upperBound..<close].split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 3 || fields.count == 4,
              isDigits(fields[0], pattern: "dddd-dd-dd"), isDigits(fields[1], pattern: "dddddd"),
              !fields[2].isEmpty else { return nil }
        var counter = 1
        if fields.count == 4 {
            guard let value = Int(fields[3]), value >= 2, String(value) == fields[3] else { return nil }
            counter = value
        }
        let baseName = String(name[..<open.lowerBound]) + String(name[name.index(after: close)...])
        guard !baseName.isEmpty else { return nil }
        return Parts(baseName: baseName, timestamp: "\(fields[0]) \(fields[1])", host: String(fields[2]),
                     counter: counter)
    }

    /// `name` split before its last extension: `("archive.tar", ".gz")`, `(".bashrc", "")`.
    static func split(_ name: String) -> (stem: String, suffix: String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex,
              name.index(after: dot) != name.endIndex else { return (name, "") }
        return (String(name[..<dot]), String(name[dot...]))
    }

    static func timestamp(_ date: Date, _ timeZone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func two(_ value: Int?) -> String { let v = value ?? 0; return v < 10 ? "0\(v)" : "\(v)" }
        return "\(c.year ?? 0)-\(two(c.month))-\(two(c.day)) \(two(c.hour))\(two(c.minute))\(two(c.second))"
    }

    /// The host as one word of at most 63 bytes (a DNS label): no spaces, slashes or parentheses.
    static func sanitized(_ host: String) -> String {
        var word = String(host.map { " /()\u{0}".contains($0) ? "-" : $0 })
        if word.isEmpty { word = "unknown" }
        while word.utf8.count > 63 { word.removeLast() }
        return word
    }

    /// `stem + tag`, with `stem` shortened so the whole name fits Linux's 255 bytes.
    static func fitted(_ stem: String, _ tag: String) -> String {
        var stem = stem
        while stem.utf8.count + tag.utf8.count > 255, !stem.isEmpty { stem.removeLast() }
        return stem + tag
    }

    /// True when `text` has the shape of `pattern`, where `d` stands for an ASCII digit.
    static func isDigits(_ text: Substring, pattern: String) -> Bool {
        text.count == pattern.count && zip(text, pattern).allSatisfy { character, shape in
            shape == "d" ? ("0"..."9").contains(character) : character == shape
        }
    }
}
