// A PROPFIND answer read byte by byte (issue 16: FoundationXML's parser was most of an idle
// poll's CPU time against Apache: a String per element name, namespace and text node, and a
// delegate call for each). Only what a 207 needs of XML 1.0 and Namespaces is read, and the
// rest is refused, never guessed: elements, attributes (only namespace declarations are
// used), character data with the five predefined entities and character references,
// CDATA, comments and processing instructions. A DOCTYPE is refused (no server sends one,
// and entity definitions are how a hostile server makes a parser blow up), and so is an
// answer in another encoding than UTF-8 (none of the servers tried sends one; FoundationXML,
// which read them before, crashed on one that named an unknown encoding and then held a byte
// that is not UTF-8 in an element's name).
//
// The bytes may come in pieces (`feed` as they arrive): a tag, a comment or an entity cut
// between two pieces is kept until the next one completes it.

import Foundation

/// Reads a 207 Multi-Status body into `MultistatusResponse`s.
struct MultistatusReader {
    /// What the body turned out to be.
    enum Outcome {
        case responses([MultistatusResponse])
        /// Why the body is not a usable answer (with the byte offset where that was found).
        case failed(String)
    }

    /// A namespace declaration in force: its prefix (bytes in `names`; empty for the default
    /// namespace) and what it names.
    private struct Binding {
        var prefix: Range<Int>
        var namespace: MultistatusNamespace
    }

    /// An element not yet ended: its qualified name (bytes in `names`, after the prefixes it
    /// declares), its tag, and how many bindings were in force before it.
    private struct Open {
        var name: Range<Int>
        var tag: MultistatusTag
        var bindings: Int
        /// Where its bytes in `names` begin (its declarations' prefixes, then its name).
        var names: Int
    }

    private var assembly = MultistatusAssembly()
    /// The qualified names of the open elements and the prefixes of the bindings, end to end.
    private var names: [UInt8] = []
    private var bindings: [Binding] = []
    private var open: [Open] = []
    /// The text of the innermost open element, when it holds a value (`holdsValue`).
    private var text: [UInt8] = []
    /// The bytes of a piece that end in the middle of a token.
    private var carry: [UInt8] = []
    /// Bytes read before the piece being read (for the offset in a failure).
    private var offset = 0
    /// Where the token being read begins in the piece being read.
    private var token = 0
    private var rootEnded = false
    private var sawRoot = false
    private var atStart = true
    private var failure: String?

    /// Reads the next piece of the body.
    mutating func feed(_ piece: UnsafeRawBufferPointer) {
        guard failure == nil, !piece.isEmpty else { return }
        if carry.isEmpty {
            let used = read(piece, final: false)
            offset += used
            if used < piece.count { carry.append(contentsOf: piece[used...]) }
        } else {
            var buffer = carry
            carry = []
            buffer.append(contentsOf: piece)
            let used = buffer.withUnsafeBytes { read($0, final: false) }
            offset += used
            carry = Array(buffer[used...])
        }
    }

    /// The outcome, once the whole body was fed.
    mutating func finish() -> Outcome {
        if failure == nil, !carry.isEmpty {
            let buffer = carry
            carry = []
            let used = buffer.withUnsafeBytes { read($0, final: true) }
            if used < buffer.count { fail("the answer ends inside a tag or a reference") }
        }
        if failure == nil, let last = open.last {
            fail("the answer ends inside <\(String(decoding: names[last.name].prefix(64), as: UTF8.self))>")
        }
        if failure == nil, !sawRoot { fail("no multistatus element") }
        if let failure = failure ?? assembly.failure { return .failed(failure) }
        return .responses(assembly.responses)
    }

    // MARK: - Tokens

    /// Reads tokens from `bytes` until one is cut off by the end (unless `final`) or
    /// something is wrong; returns how many bytes were used.
    private mutating func read(_ bytes: UnsafeRawBufferPointer, final: Bool) -> Int {
        var at = 0
        if atStart, offset == 0 {
            // A UTF-8 byte order mark is allowed; UTF-16 ones mean another encoding.
            if bytes.count < 3, !final { return 0 }
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { at = 3 }
            else if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) { fail(Self.notUTF8("UTF-16")); return 0 }
        }
        while at < bytes.count, failure == nil {
            let used: Int?
            token = at
            if bytes[at] == UInt8(ascii: "<") {
                used = markup(bytes, from: at, final: final)
            } else {
                used = characters(bytes, from: at, final: final)
            }
            guard let used else { break }
            if used > at { atStart = false }
            at = used
        }
        return at
    }

    /// Reads the markup at `start` (`<`…); returns where it ends, or nil when it is cut off.
    private mutating func markup(_ bytes: UnsafeRawBufferPointer, from start: Int, final: Bool) -> Int? {
        func ending(_ terminator: StaticString, from: Int) -> Int? {
            Self.find(terminator, in: bytes, from: from).map { $0 + terminator.utf8CodeUnitCount }
        }
        guard start + 1 < bytes.count else { return cutOff(final) }
        switch bytes[start + 1] {
        case UInt8(ascii: "/"):
            guard let close = Self.find(">", in: bytes, from: start + 2) else { return cutOff(final) }
            endTag(UnsafeRawBufferPointer(rebasing: bytes[(start + 2)..<close]))
            return close + 1
        case UInt8(ascii: "?"):
            guard let end = ending("?>", from: start + 2) else { return cutOff(final) }
            instruction(UnsafeRawBufferPointer(rebasing: bytes[(start + 2)..<(end - 2)]))
            return end
        case UInt8(ascii: "!"):
            return declaration(bytes, from: start, final: final)
        default:
            guard let close = Self.tagEnd(in: bytes, from: start + 1) else { return cutOff(final) }
            startTag(UnsafeRawBufferPointer(rebasing: bytes[(start + 1)..<close]))
            return close + 1
        }
    }

    /// A comment, a CDATA section, or a DOCTYPE (refused).
    private mutating func declaration(_ bytes: UnsafeRawBufferPointer, from start: Int, final: Bool) -> Int? {
        let rest = UnsafeRawBufferPointer(rebasing: bytes[start...])
        if Self.starts(rest, "<!--") {
            guard let end = Self.find("-->", in: bytes, from: start + 4) else { return cutOff(final) }
            return end + 3
        }
        if Self.starts(rest, "<![CDATA[") {
            guard !open.isEmpty else { fail("a CDATA section outside the root element"); return nil }
            guard let end = Self.find("]]>", in: bytes, from: start + 9) else { return cutOff(final) }
            let content = bytes[(start + 9)..<end]
            if let control = content.first(where: { $0 < 0x20 && !Self.isSpace($0) }) { fail("a control character (\(control))"); return nil }
            if open.last!.tag.holdsValue { text.append(contentsOf: content) }
            return end + 3
        }
        if rest.count < 9, Self.starts("<![CDATA[", rest) || Self.starts("<!--", rest) { return cutOff(final) }
        fail(Self.starts(rest, "<!DOCTYPE") ? "a DOCTYPE, which no WebDAV answer has" : "markup that is not XML")
        return nil
    }

    /// A processing instruction; the XML declaration's encoding is checked.
    private mutating func instruction(_ body: UnsafeRawBufferPointer) {
        guard Self.starts(body, "xml"), body.count == 3 || Self.isSpace(body[3]) else { return }
        guard atStart else { fail("an XML declaration that is not at the start"); return }
        guard let name = Self.find("encoding", in: body, from: 3) else { return }
        var at = name + 8
        while at < body.count, Self.isSpace(body[at]) || body[at] == UInt8(ascii: "=") { at += 1 }
        guard at < body.count, body[at] == UInt8(ascii: "\"") || body[at] == UInt8(ascii: "'"),
              let end = body[(at + 1)...].firstIndex(of: body[at]) else {
            fail("an XML declaration whose encoding cannot be read")
            return
        }
        let encoding = String(decoding: body[(at + 1)..<end], as: UTF8.self).lowercased()
        if !["utf-8", "utf8", "us-ascii", "ascii"].contains(encoding) { fail(Self.notUTF8(encoding)) }
    }

    /// Character data from `start` up to the next `<`; returns where it ends, or nil when an
    /// entity reference is cut off.
    private mutating func characters(_ bytes: UnsafeRawBufferPointer, from start: Int, final: Bool) -> Int? {
        let keeps = open.last?.tag.holdsValue ?? false
        var at = start, run = start
        while at < bytes.count {
            let byte = bytes[at]
            if byte == UInt8(ascii: "<") { break }
            if byte == UInt8(ascii: "&") {
                if keeps { text.append(contentsOf: bytes[run..<at]) }
                guard let semicolon = bytes[at...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else {
                    if bytes.count - at < 12, !final { return at > start ? at : cutOff(final) }
                    fail("an '&' that starts no reference")
                    return nil
                }
                guard !open.isEmpty else { fail("a reference outside the root element"); return nil }
                guard reference(UnsafeRawBufferPointer(rebasing: bytes[(at + 1)..<semicolon]), keep: keeps) else { return nil }
                at = semicolon + 1
                run = at
                continue
            }
            if byte < 0x20, !Self.isSpace(byte) { fail("a control character (\(byte))"); return nil }
            if open.isEmpty, !Self.isSpace(byte) {
                fail(rootEnded ? "text after the root element" : "text before the root element")
                return nil
            }
            at += 1
        }
        if keeps { text.append(contentsOf: bytes[run..<at]) }
        return at
    }

    /// Appends (when `keep`) the character the reference `&name;` stands for; false (and a
    /// failure) when it stands for none.
    private mutating func reference(_ name: UnsafeRawBufferPointer, keep: Bool) -> Bool {
        guard let scalar = Self.referenced(name) else {
            fail("an unknown reference &\(String(decoding: name.prefix(12), as: UTF8.self));")
            return false
        }
        if keep { text.append(contentsOf: String(Character(scalar)).utf8) }
        return true
    }

    /// The character `&name;` stands for: one of the five predefined entities or a character
    /// reference to a character XML allows.
    static func referenced(_ name: UnsafeRawBufferPointer) -> Unicode.Scalar? {
        guard name.first == UInt8(ascii: "#") else {
            switch String(decoding: name, as: UTF8.self) {
            case "lt": return "<"
            case "gt": return ">"
            case "amp": return "&"
            case "quot": return "\""
            case "apos": return "'"
            default: return nil
            }
        }
        let hex = name.count > 1 && name[1] == UInt8(ascii: "x")
        let digits = name.dropFirst(hex ? 2 : 1)
        let isDigit: (UInt8) -> Bool = { byte in
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || (hex && ((UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)))
        }
        guard !digits.isEmpty, digits.allSatisfy(isDigit),
              let value = UInt32(String(decoding: digits, as: UTF8.self), radix: hex ? 16 : 10),
              let scalar = Unicode.Scalar(value) else { return nil }
        let allowed = value >= 0x20 || value == 0x09 || value == 0x0A || value == 0x0D
        return allowed && value != 0xFFFE && value != 0xFFFF ? scalar : nil
    }

    private static func notUTF8(_ encoding: String) -> String {
        "an answer in \(encoding.prefix(40)); tidesync reads answers in UTF-8, which every WebDAV server tried sends"
    }

    private mutating func cutOff(_ final: Bool) -> Int? {
        if final { fail("the answer ends inside a tag") }
        return nil
    }

    private mutating func fail(_ reason: String) {
        if failure == nil { failure = "\(reason) at byte \(offset + token)" }
    }

    // MARK: - Elements

    /// A start tag's content (`name attr="…" …`, maybe ending in `/`).
    private mutating func startTag(_ content: UnsafeRawBufferPointer) {
        guard !rootEnded else { fail("a second root element"); return }
        let empty = content.last == UInt8(ascii: "/")
        let body = UnsafeRawBufferPointer(rebasing: content[..<(empty ? content.count - 1 : content.count)])
        var at = 0
        while at < body.count, !Self.isSpace(body[at]) { at += 1 }
        let qualified = UnsafeRawBufferPointer(rebasing: body[..<at])
        guard Self.isName(qualified) else { fail("a tag without a proper name"); return }
        guard qualified.count <= 1024 else { fail("an element name of \(qualified.count) bytes"); return }
        let before = bindings.count, namesBefore = names.count
        guard declareNamespaces(UnsafeRawBufferPointer(rebasing: body[at...])),
              let tag = resolve(qualified) else { return }
        if open.isEmpty {
            guard tag == .multistatus else { fail("an answer whose root is not a DAV: multistatus"); return }
            sawRoot = true
        }
        assembly.start(tag, parent: open.last?.tag)
        let nameStart = names.count
        names.append(contentsOf: qualified)
        open.append(Open(name: nameStart..<names.count, tag: tag, bindings: before, names: namesBefore))
        text.removeAll(keepingCapacity: true)
        if empty { close() }
    }

    /// An end tag's content (the name, maybe followed by spaces).
    private mutating func endTag(_ content: UnsafeRawBufferPointer) {
        var count = content.count
        while count > 0, Self.isSpace(content[count - 1]) { count -= 1 }
        guard let last = open.last else { fail("an end tag with no element to end"); return }
        guard names[last.name].elementsEqual(content[..<count]) else {
            fail("</\(String(decoding: content[..<min(count, 64)], as: UTF8.self))> where </\(String(decoding: names[last.name].prefix(64), as: UTF8.self))> belongs")
            return
        }
        close()
    }

    /// Ends the innermost open element.
    private mutating func close() {
        let element = open.removeLast()
        var value = ""
        if element.tag.holdsValue {
            guard let decoded = String(validating: text, as: UTF8.self) else {
                fail("a value that is not UTF-8")
                return
            }
            value = decoded
        }
        assembly.end(element.tag, parent: open.last?.tag, text: value)
        text.removeAll(keepingCapacity: true)
        names.removeSubrange(element.names...)
        bindings.removeSubrange(element.bindings...)
        if open.isEmpty { rootEnded = true }
    }

    /// Reads the attributes; namespace declarations are put in force. False when they are
    /// not well-formed.
    private mutating func declareNamespaces(_ attributes: UnsafeRawBufferPointer) -> Bool {
        let declaring = bindings.count  // this element's own bindings begin here
        var at = 0
        while true {
            let spaced = at < attributes.count && Self.isSpace(attributes[at])
            while at < attributes.count, Self.isSpace(attributes[at]) { at += 1 }
            guard at < attributes.count else { return true }
            guard spaced else { fail("attributes not separated by a space"); return false }
            let nameStart = at
            while at < attributes.count, attributes[at] != UInt8(ascii: "="), !Self.isSpace(attributes[at]) { at += 1 }
            let name = UnsafeRawBufferPointer(rebasing: attributes[nameStart..<at])
            while at < attributes.count, Self.isSpace(attributes[at]) { at += 1 }
            guard Self.isName(name), at < attributes.count, attributes[at] == UInt8(ascii: "=") else {
                fail("an attribute without a value")
                return false
            }
            at += 1
            while at < attributes.count, Self.isSpace(attributes[at]) { at += 1 }
            guard at < attributes.count, attributes[at] == UInt8(ascii: "\"") || attributes[at] == UInt8(ascii: "'"),
                  let end = attributes[(at + 1)...].firstIndex(of: attributes[at]) else {
                fail("an attribute value without quotes")
                return false
            }
            let value = UnsafeRawBufferPointer(rebasing: attributes[(at + 1)..<end])
            at = end + 1
            guard !value.contains(UInt8(ascii: "<")) else { fail("a '<' in an attribute value"); return false }
            if name.count == 5, Self.starts(name, "xmlns") {
                guard bind(prefix: UnsafeRawBufferPointer(start: nil, count: 0), to: value, declaring: declaring) else { return false }
            } else if Self.starts(name, "xmlns:") {
                let prefix = UnsafeRawBufferPointer(rebasing: name[6...])
                guard !prefix.isEmpty, !value.isEmpty, bind(prefix: prefix, to: value, declaring: declaring) else {
                    fail("a namespace prefix that is empty or bound to nothing")
                    return false
                }
            }
        }
    }

    /// Puts `prefix` → `value` in force; `declaring` is where the element's own bindings begin.
    private mutating func bind(prefix: UnsafeRawBufferPointer, to value: UnsafeRawBufferPointer, declaring: Int) -> Bool {
        // Declared twice on one element: XML forbids it (which of the two would hold?).
        guard !bindings[declaring...].contains(where: { names[$0.prefix].elementsEqual(prefix) }) else {
            fail("a namespace declared twice on one element")
            return false
        }
        var uri = ""
        var at = 0
        while at < value.count {
            guard value[at] == UInt8(ascii: "&") else {
                let next = value[at...].firstIndex(of: UInt8(ascii: "&")) ?? value.count
                uri += String(decoding: value[at..<next], as: UTF8.self)
                at = next
                continue
            }
            guard let semicolon = value[at...].firstIndex(of: UInt8(ascii: ";")),
                  let scalar = Self.referenced(UnsafeRawBufferPointer(rebasing: value[(at + 1)..<semicolon])) else {
                fail("a bad reference in a namespace name")
                return false
            }
            uri.unicodeScalars.append(scalar)
            at = semicolon + 1
        }
        let start = names.count
        names.append(contentsOf: prefix)
        bindings.append(Binding(prefix: start..<names.count, namespace: MultistatusNamespace(uri: uri)))
        return true
    }

    /// The tag of the element named `qualified` (`prefix:local` or `local`), with the
    /// bindings in force; nil (and a failure) for an undeclared prefix.
    private mutating func resolve(_ qualified: UnsafeRawBufferPointer) -> MultistatusTag? {
        let colon = qualified.firstIndex(of: UInt8(ascii: ":"))
        let prefix = UnsafeRawBufferPointer(rebasing: qualified[..<(colon ?? 0)])
        let local = UnsafeRawBufferPointer(rebasing: qualified[(colon.map { $0 + 1 } ?? 0)...])
        guard colon.map({ $0 > 0 && !local.isEmpty && !local.contains(UInt8(ascii: ":")) }) ?? true else {
            fail("a malformed element name")
            return nil
        }
        guard let binding = bindings.last(where: { names[$0.prefix].elementsEqual(prefix) }) else {
            if prefix.isEmpty || (prefix.count == 3 && Self.starts(prefix, "xml")) { return .other }
            fail("an undeclared namespace prefix \(String(decoding: prefix.prefix(64), as: UTF8.self))")
            return nil
        }
        return MultistatusTag(local: local, namespace: binding.namespace)
    }

    // MARK: - Bytes

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D
    }

    /// A name: not empty, and none of the bytes that end or break a tag.
    private static func isName(_ name: UnsafeRawBufferPointer) -> Bool {
        guard let first = name.first, first != UInt8(ascii: "-"), first != UInt8(ascii: "."),
              !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return !name.contains { $0 < 0x21 || $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: "&") || $0 == UInt8(ascii: "=")
            || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "'") || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: ">") }
    }

    /// Whether `bytes` begins with `prefix`.
    private static func starts(_ bytes: UnsafeRawBufferPointer, _ prefix: StaticString) -> Bool {
        bytes.count >= prefix.utf8CodeUnitCount && memcmp(bytes.baseAddress!, prefix.utf8Start, prefix.utf8CodeUnitCount) == 0
    }

    /// Whether `prefix` begins with `bytes` (a token cut off after them may still be it).
    private static func starts(_ prefix: StaticString, _ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count <= prefix.utf8CodeUnitCount && (bytes.isEmpty || memcmp(bytes.baseAddress!, prefix.utf8Start, bytes.count) == 0)
    }

    /// Where `needle` next starts in `bytes` at or after `from`.
    private static func find(_ needle: StaticString, in bytes: UnsafeRawBufferPointer, from: Int) -> Int? {
        let count = needle.utf8CodeUnitCount
        let first = needle.utf8Start.pointee
        var at = from
        while at + count <= bytes.count {
            guard let hit = memchr(bytes.baseAddress! + at, Int32(first), bytes.count - at) else { return nil }
            at = bytes.baseAddress!.distance(to: UnsafeRawPointer(hit))
            guard at + count <= bytes.count else { return nil }
            if memcmp(bytes.baseAddress! + at, needle.utf8Start, count) == 0 { return at }
            at += 1
        }
        return nil
    }

    /// The `>` ending the start tag whose content begins at `from` (quoted values may hold
    /// `>`); nil when it is not in `bytes`.
    private static func tagEnd(in bytes: UnsafeRawBufferPointer, from: Int) -> Int? {
        var quote: UInt8 = 0
        var at = from
        while at < bytes.count {
            let byte = bytes[at]
            if quote != 0 {
                if byte == quote { quote = 0 }
            } else if byte == UInt8(ascii: ">") {
                return at
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            }
            at += 1
        }
        return nil
    }
}
