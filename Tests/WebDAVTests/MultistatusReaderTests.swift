import Foundation
import SyncEngine
import Testing
@testable import WebDAV

/// The byte-level reader of PROPFIND answers against FoundationXML (libxml2), which read them
/// before: the same responses for what servers send, a failure for what is broken, and the
/// same outcome whatever pieces the bytes arrive in.
@Suite("Multistatus reader")
struct MultistatusReaderTests {
    /// One response of a file, as most servers write it (`prefix` for DAV:).
    static func file(_ prefix: String, href: String, size: String = "12", etag: String = "&quot;e1&quot;") -> String {
        """
        <\(prefix)response><\(prefix)href>\(href)</\(prefix)href><\(prefix)propstat><\(prefix)prop>\
        <\(prefix)resourcetype/><\(prefix)getcontentlength>\(size)</\(prefix)getcontentlength>\
        <\(prefix)getetag>\(etag)</\(prefix)getetag>\
        <\(prefix)getlastmodified>Sun, 22 Nov 2026 13:45:01 GMT</\(prefix)getlastmodified></\(prefix)prop>\
        <\(prefix)status>HTTP/1.1 200 OK</\(prefix)status></\(prefix)propstat></\(prefix)response>
        """
    }

    /// Answers shaped as the servers tried send them, and the corners of XML they may use.
    static let accepted: [String] = [
        // Apache mod_dav: "D:" prefix, a namespace per property, lp1 for live properties.
        """
        <?xml version="1.0" encoding="utf-8"?>
        <D:multistatus xmlns:D="DAV:" xmlns:ns1="https://tidesync.org/ns/1" xmlns:ns0="DAV:">
        <D:response xmlns:lp1="DAV:" xmlns:lp2="http://apache.org/dav/props/">
        <D:href>/dav/caf%c3%a9%20&amp;%20co/</D:href>
        <D:propstat>
        <D:prop>
        <lp1:resourcetype><D:collection/></lp1:resourcetype>
        <lp1:getetag>"1000-5f2a"</lp1:getetag>
        </D:prop>
        <D:status>HTTP/1.1 200 OK</D:status>
        </D:propstat>
        <D:propstat>
        <D:prop>
        <ns1:symlink-target/>
        </D:prop>
        <D:status>HTTP/1.1 404 Not Found</D:status>
        </D:propstat>
        </D:response>
        \(file("D:", href: "/dav/caf%c3%a9%20&amp;%20co/a.txt", etag: "W/\"c-5f2a\""))
        </D:multistatus>
        """,
        // Nextcloud (sabre/dav): "d:", oc: and nc: namespaces, checksums.
        """
        <?xml version="1.0"?>
        <d:multistatus xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns">\
        <d:response><d:href>/remote.php/dav/files/alice/</d:href><d:propstat><d:prop><d:resourcetype><d:collection/></d:resourcetype>\
        <d:getetag>&quot;6566f2&quot;</d:getetag><oc:fileid>00000017ocabc</oc:fileid></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat>\
        <d:propstat><d:prop><d:getcontentlength/></d:prop><d:status>HTTP/1.1 404 Not Found</d:status></d:propstat></d:response>\
        <d:response><d:href>/remote.php/dav/files/alice/b.jpg</d:href><d:propstat><d:prop><d:resourcetype/>\
        <d:getcontentlength>999</d:getcontentlength><d:getetag>&quot;ab&quot;</d:getetag><oc:fileid>18</oc:fileid>\
        <oc:checksums><oc:checksum>SHA1:a9993e364706816aba3e25717850c26c9cd0d89d</oc:checksum><oc:checksum>MD5:900150983cd24fb0d6963f7d28e17f72</oc:checksum></oc:checksums>\
        <nc:has-preview>true</nc:has-preview></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus>
        """,
        // A default namespace (rclone, lighttpd), single quotes, spaces before '>' and '/>'.
        """
        <?xml version='1.0' encoding='UTF-8'?><multistatus xmlns='DAV:' ><response ><href>/r/x%20y.txt</href>\
        <propstat><prop><resourcetype /><getcontentlength >7</getcontentlength><getetag>"x"</getetag></prop>\
        <status>HTTP/1.1 200 OK</status></propstat></response></multistatus  >
        """,
        // The default namespace undeclared and declared again below; a prefix rebound.
        """
        <m:multistatus xmlns:m="DAV:" xmlns="urn:other"><m:response><href>/not/this</href><m:href>/dav/a</m:href>\
        <m:propstat xmlns:m="urn:other"><m:prop/></m:propstat>\
        <propstat xmlns="DAV:"><prop><resourcetype/><getcontentlength>1</getcontentlength></prop><status>HTTP/1.1 200 OK</status></propstat>\
        </m:response></m:multistatus>
        """,
        // Comments, processing instructions, CDATA, character references, a BOM, '>' in a
        // quoted attribute value, entities in a namespace name.
        "\u{FEFF}<?xml version=\"1.0\"?><!-- before --><?pi data?>\n" + """
        <d:multistatus xmlns:d="D&#65;V:" xmlns:x="a>b"><d:response x:y='1>2' x:z="&lt;"><d:href>/dav/<!-- c -->caf&#xE9;&#233;<![CDATA[ <&> ]]>x</d:href>\
        <d:propstat><d:prop><d:resourcetype/><d:getcontentlength>&#51;</d:getcontentlength><d:getetag>&apos;q&apos;</d:getetag></d:prop>\
        <d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus><!-- after -->\n<?after?>\n
        """,
        // A symlink target keeps its spaces; an empty multistatus.
        """
        <d:multistatus xmlns:d="DAV:" xmlns:t="https://tidesync.org/ns/1"><d:response><d:href>/dav/l</d:href><d:propstat><d:prop>\
        <d:resourcetype/><d:getcontentlength>0</d:getcontentlength><t:symlink-target> ../a b </t:symlink-target></d:prop>\
        <d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus>
        """,
        "<d:multistatus xmlns:d=\"DAV:\"/>",
        "<d:multistatus xmlns:d=\"DAV:\"></d:multistatus>",
        // A prefix rebound on an empty element before the href: the href is still DAV:'s.
        "<d:multistatus xmlns:d=\"DAV:\"><d:response><x xmlns:d=\"urn:o\"/>"
            + file("d:", href: "/dav/b").dropFirst("<d:response>".count) + "</d:multistatus>",
    ]

    /// Broken or hostile bodies: each must fail, never read as an answer (many as an empty one).
    static let refused: [String] = [
        "<!DOCTYPE m [<!ENTITY a \"aaaa\"><!ENTITY b \"&a;&a;&a;\">]><d:multistatus xmlns:d=\"DAV:\">&b;</d:multistatus>",
        "<d:multistatus xmlns:d=\"DAV:\">", "<d:multistatus xmlns:d=\"DAV:\"></d:multistatu>",
        "<d:multistatus xmlns:d=\"DAV:\"></d:multistatus><d:multistatus xmlns:d=\"DAV:\"/>",
        "<d:multistatus xmlns:d=\"DAV:\"/>trailing", "text<d:multistatus xmlns:d=\"DAV:\"/>",
        "<multistatus/>", "<x:multistatus xmlns:d=\"DAV:\"/>", "<d:multistatus xmlns:d=\"urn:x\"/>",
        "<d:multistatus xmlns:d=\"DAV:\">&bogus;</d:multistatus>", "<d:multistatus xmlns:d=\"DAV:\">&#0;</d:multistatus>",
        "<d:multistatus xmlns:d=\"DAV:\">&#xD800;</d:multistatus>", "<d:multistatus xmlns:d=\"DAV:\">a & b</d:multistatus>",
        "<d:multistatus xmlns:d=\"DAV:\">\u{01}</d:multistatus>", "<d:multistatus xmlns:d=\"DAV:\" a=\"1\"b=\"2\"/>",
        "<d:multistatus xmlns:d=\"DAV:\" a=1/>", "<d:multistatus xmlns:d=\"DAV:\" a/>", "<d:multistatus xmlns:d=\"DAV:\" a=\"<\"/>",
        "<d:multistatus xmlns:d=\"DAV:\" xmlns:e=\"\"/>", "<d:multistatus xmlns:d=\"DAV:\"><:x/></d:multistatus>",
        "<d:multistatus xmlns:d=\"DAV:\"><d:/></d:multistatus>", "<d:multistatus xmlns:d=\"DAV:\"><a:b:c/></d:multistatus>",
        "<d:multistatus xmlns:d=\"DAV:\"><1a/></d:multistatus>", "<d:multistatus xmlns:d=\"DAV:\"><![CDATA[x</d:multistatus>",
        "<d:multistatus xmlns:d=\"DAV:\"><!-- x</d:multistatus>", "<d:multistatus xmlns:d=\"DAV:\"><!x></d:multistatus>",
        "<d:multistatus xmlns:d=\"DAV:\"></>", "</d:multistatus>", " <?xml version=\"1.0\"?><d:multistatus xmlns:d=\"DAV:\"/>",
        "<d:multistatus xmlns:d=\"DAV:\"><?xml version=\"1.0\"?></d:multistatus>",
        "<d:multistatus xmlns:d=\"DAV:\"><d:response><d:href>/dav/\u{FF}</d:href></d:response></d:multistatus>",
        "<d:multistatus xmlns:d=\"DAV:\"><d:response><d:href>/x</d:href></d:response></d:multistatus>",
        "<d:multistatus xmlns:d=\"DAV:\"><d:response><d:href>/x</d:href><d:status>HTTP/1.1 404 Not Found</d:status></d:response></d:multistatus>",
        "<html><body>Login</body></html>", "\u{FEFF}", "<", "<d:multistatus xmlns:d=\"DAV:\"", "&amp;",
        // A prefix used after the element that declared it ended; declared twice; empty.
        "<d:multistatus xmlns:d=\"DAV:\"><a xmlns:p=\"urn:x\"/><p:b/></d:multistatus>",
        "<d:multistatus xmlns:d=\"DAV:\"><a xmlns:p=\"urn:x\"></a><p:b/></d:multistatus>",
        "<d:multistatus xmlns:d=\"DAV:\" xmlns:d=\"DAV:\"/>", "<d:multistatus xmlns=\"DAV:\" xmlns=\"DAV:\"/>",
        "<d:multistatus xmlns:d=\"DAV:\" xmlns:=\"DAV:\"/>",
        "<d:multistatus xmlns:d=\"DAV:\"><d:response><d:href><![CDATA[/a\u{01}]]></d:href></d:response></d:multistatus>",
    ]

    static func outcome(_ body: [UInt8]) -> String {
        do {
            return try MultistatusParser.parse(Data(body)).map(describe).joined(separator: "\n")
        } catch {
            return "failed"
        }
    }

    static func describe(_ r: MultistatusResponse) -> String {
        "\(r.href)|\(r.isCollection)|\(r.contentLength.map(String.init) ?? "-")|\(r.etag ?? "-")|\(r.lastModified ?? "-")|"
            + "\(r.fileID ?? "-")|\(r.symlinkTarget ?? "-")|\(r.checksums ?? "-")|\(r.hasPreview.map(String.init) ?? "-")"
    }

    static func foundation(_ body: String) -> String {
        do {
            return try FoundationMultistatusParser.parse(Data(body.utf8)).map(describe).joined(separator: "\n")
        } catch {
            return "failed"
        }
    }

    /// One test, not one per answer: FoundationXML's parsers must not run at the same time.
    @Test("what servers send reads as FoundationXML read it")
    func sameAsFoundation() throws {
        // FoundationXML traps on accepted[4]: on its processing instruction after the root.
        // (And it read CDATA as nothing: accepted[4] is checked by `corners` instead.)
        for (index, body) in Self.accepted.enumerated() where index != 4 {
            let read = Self.outcome(Array(body.utf8))
            #expect(read != "failed", "\(body)")
            #expect(read == Self.foundation(body), "\(body)")
        }
    }

    @Test("a failure names the byte where the token at fault begins")
    func failureOffset() {
        let error = #expect(throws: ProviderError.self) {
            try MultistatusParser.parse(Data("<d:multistatus xmlns:d=\"DAV:\">\n<d:x>&bogus;</d:x></d:multistatus>".utf8))
        }
        #expect(error?.underlying?.hasSuffix("at byte 36") == true, "\(String(describing: error?.underlying))")
    }

    @Test("the corners of XML a server may use are read as XML says")
    func corners() throws {
        let responses = try MultistatusParser.parse(Data(Self.accepted[4].utf8))
        #expect(responses.count == 1)
        #expect(responses[0].href == "/dav/caf\u{E9}\u{E9} <&> x")
        #expect(responses[0].contentLength == 3 && responses[0].etag == "'q'")
        #expect(try MultistatusParser.parse(Data(Self.accepted[5].utf8))[0].symlinkTarget == " ../a b ")
        let rebound = try MultistatusParser.parse(Data(Self.accepted[3].utf8))
        #expect(rebound.count == 1 && rebound[0].href == "/dav/a" && rebound[0].contentLength == 1)
    }

    @Test("broken and hostile bodies fail", arguments: refused)
    func refusedBodies(body: String) {
        #expect(Self.outcome(Array(body.utf8)) == "failed", "\(body)")
    }

    @Test("a value that is not UTF-8 fails, where a lenient decoder would have made another name of it")
    func notUTF8() {
        var body = Array("<d:multistatus xmlns:d=\"DAV:\">".utf8) + Array(Self.file("d:", href: "/dav/a").utf8)
            + Array("</d:multistatus>".utf8)
        #expect(Self.outcome(body) != "failed")
        let at = body.firstIndex(of: UInt8(ascii: "a"))!
        body[body.indices.first { $0 > at && body[$0 - 5] == UInt8(ascii: "/") && body[$0] == UInt8(ascii: "a") }!] = 0xC3
        #expect(Self.outcome(body) == "failed")
    }

    @Test("an answer in another encoding than UTF-8 is refused, saying so")
    func otherEncoding() throws {
        var body = Array("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><d:multistatus xmlns:d=\"DAV:\">".utf8)
        body += Array(Self.file("d:", href: "/dav/caf_").utf8) + Array("</d:multistatus>".utf8)
        body[body.firstIndex(of: UInt8(ascii: "_"))!] = 0xE9  // é in Latin-1
        let error = #expect(throws: ProviderError.self) { try MultistatusParser.parse(Data(body)) }
        #expect(error?.underlying?.contains("an answer in iso-8859-1; tidesync reads answers in UTF-8") == true, "\(String(describing: error))")
        #expect(Self.outcome([0xFF, 0xFE] + Array("<\0d\0".utf8)) == "failed")
    }

    /// Found by `cutAndMangled` and `sameAsFoundation` while FoundationXML still read answers.
    @Test("bodies FoundationXML trapped on are read or refused")
    func trappedFoundation() {
        // An unknown encoding, then a byte that is not UTF-8 in an element's name.
        var unknown = Array("<?xml version=\"1.0\" encoding=\"ut!f-8\"?>\n<d:multistatus xmlns:d=\"DAV:\">".utf8)
        unknown += Array("<d:response><d:href>/x</d:href><d:propstat><d:prop><d:getetag".utf8) + [0xC3]
        unknown += Array(">\"1\"</d:getetag></d:prop></d:propstat></d:response></d:multistatus>".utf8)
        #expect(Self.outcome(unknown) == "failed")
        // A processing instruction after the root element: well-formed XML.
        #expect(Self.outcome(Array("<d:multistatus xmlns:d=\"DAV:\"/><?after?>".utf8)) == "")
    }

    @Test("pieces cut anywhere read as the whole body", arguments: accepted.indices.map { $0 } + [-1])
    func pieces(index: Int) {
        let body = Array((index >= 0 ? Self.accepted[index] : Self.refused[9]).utf8)
        let whole = Self.outcome(body)
        for cut in 0...body.count {
            var reader = MultistatusReader()
            body[..<cut].withUnsafeBytes { reader.feed($0) }
            body[cut...].withUnsafeBytes { reader.feed($0) }
            #expect(Self.text(reader.finish()) == whole, "cut at \(cut)")
        }
        var reader = MultistatusReader()
        for byte in body { [byte].withUnsafeBytes { reader.feed($0) } }
        #expect(Self.text(reader.finish()) == whole, "byte by byte")
    }

    static func text(_ outcome: MultistatusReader.Outcome) -> String {
        guard case .responses(let responses) = outcome else { return "failed" }
        return responses.map(describe).joined(separator: "\n")
    }

    @Test("a body cut short anywhere fails; a mangled body crashes nothing and reads the same in two pieces as whole")
    func cutAndMangled() {
        let body = Array(Self.accepted[1].utf8)
        for cut in 1..<body.count where !body[..<cut].allSatisfy({ $0 == 0x20 }) {
            #expect(Self.outcome(Array(body[..<cut])) == "failed", "cut at \(cut)")
        }
        var generator = SeededBytes(seed: 16)
        let specials = Array("<>&;:/\"'=![]-?#x \u{01}".utf8) + [0xC3, 0xFF]
        for _ in 0..<3000 {
            var mangled = Array(Self.accepted[generator.next() % 5].utf8)
            for _ in 0...(generator.next() % 3) {
                let at = generator.next() % mangled.count
                switch generator.next() % 3 {
                case 0: mangled[at] = specials[generator.next() % specials.count]
                case 1: mangled.remove(at: at)
                default: mangled.insert(specials[generator.next() % specials.count], at: at)
                }
            }
            let whole = Self.outcome(mangled)
            let cut = generator.next() % (mangled.count + 1)
            var reader = MultistatusReader()
            mangled[..<cut].withUnsafeBytes { reader.feed($0) }
            mangled[cut...].withUnsafeBytes { reader.feed($0) }
            #expect(Self.text(reader.finish()) == whole, "\(mangled) cut at \(cut)")
        }
    }
}

/// A fixed sequence of numbers (xorshift), so a failure names the same bytes every run.
struct SeededBytes {
    private var state: UInt64
    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }
    mutating func next() -> Int {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return Int(truncatingIfNeeded: state >> 1)
    }
}
