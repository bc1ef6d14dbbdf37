/// Where keys and values sit in a TOML document's text, by key path.
///
/// TOMLKit reports positions for syntax errors only, so the validator looks
/// keys up here. A key path names a value the way the validator walks the
/// parsed table: table and key names, and `[N]` for the N-th element of an
/// array or array of tables, e.g. `["domain", "[1]", "placeholders", "mode"]`.
/// The text is assumed to have parsed as TOML already; where the scanner does
/// not understand it, it skips ahead, so it always finishes.
struct SourceMap {
    /// A 1-based line and column (columns count Unicode scalars).
    struct Position: Equatable {
        let line: Int
        let column: Int
    }

    private let keys: [[String]: Position]
    private let values: [[String]: Position]

    init(text: String) {
        var scanner = SourceScanner(text)
        scanner.scanDocument()
        keys = scanner.keys
        values = scanner.values
    }

    /// Where the key (or table header) is written; for a key that is not in
    /// the text, where its nearest enclosing table is.
    func key(_ path: [String]) -> Position? {
        var path = path
        while !path.isEmpty {
            if let position = keys[path] { return position }
            path.removeLast()
        }
        return nil
    }

    /// Where the value starts; falls back as ``key(_:)`` does.
    func value(_ path: [String]) -> Position? {
        values[path] ?? key(path)
    }
}

/// A single pass over the text recording positions; see ``SourceMap``.
private struct SourceScanner {
    private let scalars: [Unicode.Scalar]
    private var index = 0
    private var line = 1
    private var column = 1
    /// The key path of the current `[table]` or `[[array]]` element.
    private var table: [String] = []
    /// How many elements each array of tables has so far, by resolved path.
    private var arrayLengths: [[String]: Int] = [:]
    private(set) var keys: [[String]: SourceMap.Position] = [:]
    private(set) var values: [[String]: SourceMap.Position] = [:]

    init(_ text: String) {
        scalars = Array(text.unicodeScalars)
    }

    private var current: Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }
    private var position: SourceMap.Position { .init(line: line, column: column) }

    private func peek(_ offset: Int) -> Unicode.Scalar? {
        index + offset < scalars.count ? scalars[index + offset] : nil
    }

    private mutating func advance() {
        guard let scalar = current else { return }
        index += 1
        if scalar == "\n" {
            line += 1
            column = 1
        } else {
            column += 1
        }
    }

    mutating func scanDocument() {
        while current != nil {
            let start = index
            skipBlank(newlines: true)
            guard let scalar = current else { break }
            if scalar == "[" {
                scanHeader()
            } else if Self.startsKey(scalar) {
                scanKeyValue(in: table)
            } else {
                skipLine()
            }
            if index == start { advance() }
        }
    }

    // MARK: Tables and keys

    private mutating func scanHeader() {
        let start = position
        advance()
        let isArray = current == "["
        if isArray { advance() }
        skipBlank(newlines: false)
        let segments = scanKey()
        skipBlank(newlines: false)
        if current == "]" { advance() }
        if isArray, current == "]" { advance() }
        table = resolve(segments, isArray: isArray)
        record(key: table, at: start)
        if isArray { record(key: Array(table.dropLast()), at: start) }
    }

    /// The header's path with array-of-tables elements made explicit; a new
    /// `[[x]]` header adds an element to `x`.
    private mutating func resolve(_ segments: [String], isArray: Bool) -> [String] {
        var path: [String] = []
        for (offset, segment) in segments.enumerated() {
            path.append(segment)
            if isArray && offset == segments.count - 1 {
                let length = arrayLengths[path, default: 0]
                arrayLengths[path] = length + 1
                path.append("[\(length)]")
            } else if let length = arrayLengths[path], length > 0 {
                path.append("[\(length - 1)]")
            }
        }
        return path
    }

    private mutating func scanKeyValue(in base: [String]) {
        let start = position
        let segments = scanKey()
        guard !segments.isEmpty else { return skipLine() }
        for count in 1...segments.count {
            record(key: base + segments.prefix(count), at: start)
        }
        skipBlank(newlines: false)
        guard current == "=" else { return skipLine() }
        advance()
        skipBlank(newlines: false)
        scanValue(at: base + segments)
    }

    /// A possibly dotted key: bare, "basic" or 'literal' segments.
    private mutating func scanKey() -> [String] {
        var segments: [String] = []
        while let scalar = current {
            if scalar == "\"" || scalar == "'" {
                segments.append(scanQuotedKey(quote: scalar))
            } else if Self.isBare(scalar) {
                var segment = ""
                while let next = current, Self.isBare(next) {
                    segment.unicodeScalars.append(next)
                    advance()
                }
                segments.append(segment)
            } else {
                break
            }
            skipBlank(newlines: false)
            guard current == "." else { break }
            advance()
            skipBlank(newlines: false)
        }
        return segments
    }

    private mutating func scanQuotedKey(quote: Unicode.Scalar) -> String {
        var text = ""
        advance()
        while let scalar = current, scalar != "\n" {
            advance()
            if scalar == quote { break }
            if quote == "\"", scalar == "\\", let escaped = current {
                advance()
                text.unicodeScalars.append(escaped)
            } else {
                text.unicodeScalars.append(scalar)
            }
        }
        return text
    }

    private mutating func record(key path: [String], at position: SourceMap.Position) {
        if keys[path] == nil { keys[path] = position }
    }

    // MARK: Values

    private mutating func scanValue(at path: [String]) {
        if values[path] == nil { values[path] = position }
        switch current {
        case "\""?: skipString(quote: "\"")
        case "'"?: skipString(quote: "'")
        case "["?: scanArray(at: path)
        case "{"?: scanInlineTable(at: path)
        default:
            while let scalar = current, !",]}#\n".unicodeScalars.contains(scalar) { advance() }
        }
    }

    private mutating func scanArray(at path: [String]) {
        advance()
        var count = 0
        while current != nil {
            skipBlank(newlines: true)
            guard let scalar = current else { return }
            if scalar == "]" { return advance() }
            if scalar == "," {
                advance()
                continue
            }
            let start = index
            scanValue(at: path + ["[\(count)]"])
            count += 1
            if index == start { advance() }
        }
    }

    private mutating func scanInlineTable(at path: [String]) {
        advance()
        while current != nil {
            skipBlank(newlines: true)
            guard let scalar = current else { return }
            if scalar == "}" { return advance() }
            let start = index
            if Self.startsKey(scalar) { scanKeyValue(in: path) }
            if index == start { advance() }
        }
    }

    private mutating func skipString(quote: Unicode.Scalar) {
        let escapes = quote == "\""
        if peek(1) == quote, peek(2) == quote {
            for _ in 0..<3 { advance() }
            while let scalar = current {
                if escapes, scalar == "\\" {
                    advance()
                    advance()
                } else if scalar == quote, peek(1) == quote, peek(2) == quote {
                    for _ in 0..<3 { advance() }
                    // Up to two more quotes belong to the string.
                    if current == quote { advance() }
                    if current == quote { advance() }
                    return
                } else {
                    advance()
                }
            }
            return
        }
        advance()
        while let scalar = current, scalar != "\n" {
            advance()
            if scalar == quote { return }
            if escapes, scalar == "\\" { advance() }
        }
    }

    // MARK: Blanks

    /// Skips spaces, tabs, carriage returns, a byte-order mark, comments and,
    /// if `newlines`, line breaks.
    private mutating func skipBlank(newlines: Bool) {
        while let scalar = current {
            switch scalar {
            case " ", "\t", "\r", "\u{FEFF}": advance()
            case "#": while let next = current, next != "\n" { advance() }
            case "\n" where newlines: advance()
            default: return
            }
        }
    }

    private mutating func skipLine() {
        while let scalar = current, scalar != "\n" { advance() }
    }

    private static func isBare(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "_" || scalar == "-")
    }

    private static func startsKey(_ scalar: Unicode.Scalar) -> Bool {
        isBare(scalar) || scalar == "\"" || scalar == "'"
    }
}
