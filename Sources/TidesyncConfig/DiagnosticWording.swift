import TOMLKit

/// Small pieces of wording shared by the diagnostics.
enum DiagnosticWording {
    /// `text` in double quotes, with quotes, backslashes and control characters
    /// escaped; cut to `limit` characters (marked with `…`) when one is given.
    static func quoted(_ text: String, limit: Int = .max) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars.prefix(limit) {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\t": escaped += "\\t"
            default:
                if scalar.properties.generalCategory == .control {
                    escaped += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    escaped.unicodeScalars.append(scalar)
                }
            }
        }
        return "\"" + escaped + (text.unicodeScalars.count > limit ? "…" : "") + "\""
    }

    /// What a TOML value is, for "found …": `a string ("four")`, `an integer (4)`, `a table`.
    static func found(_ value: TOMLValueConvertible) -> String {
        switch value.type {
        case .string: "a string (\(quoted(value.string ?? "", limit: 60)))"
        case .int: "an integer (\(value.int ?? 0))"
        case .double: "a floating-point number (\(value.double ?? 0))"
        case .bool: "a boolean (\(value.bool ?? false))"
        case .array: value.array?.isEmpty == true ? "an empty array" : "an array"
        case .table: "a table"
        case .date: "a date"
        case .time: "a time"
        case .dateTime: "a date-time"
        }
    }

    /// `a`, `a and b`, `a, b and c`.
    static func list(_ items: [String], conjunction: String = "and") -> String {
        guard items.count > 1, let last = items.last else { return items.first ?? "" }
        return items.dropLast().joined(separator: ", ") + " \(conjunction) " + last
    }

    /// The candidate closest to `word` by edit distance (ignoring case and
    /// treating `-` as `_`), if it is close enough to be a likely typo.
    static func suggestion(for word: String, among candidates: [String]) -> String? {
        let normalized = word.lowercased().replacingOccurrences(of: "-", with: "_")
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let distance = editDistance(Array(normalized), Array(candidate))
            let limit = max(1, min(3, candidate.count / 4))
            if distance <= limit, distance < (best?.distance ?? .max) {
                best = (candidate, distance)
            }
        }
        return best?.candidate
    }

    /// Levenshtein distance.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var row = [i + 1]
            for (j, y) in b.enumerated() {
                row.append(min(previous[j + 1] + 1, row[j] + 1, previous[j] + (x == y ? 0 : 1)))
            }
            previous = row
        }
        return previous[b.count]
    }
}
