import Foundation
import SyncEngine
import Testing
@testable import WebDAV

/// What a server (broken, hostile or just unusual) can send, and what the parser makes of it.
@Suite("Multistatus parsing")
struct MultistatusParserTests {
    static let nextcloudStyle = """
        <?xml version="1.0"?>
        <d:multistatus xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">
         <d:response>
          <d:href>/remote.php/dav/files/alice/Docs/</d:href>
          <d:propstat><d:prop><d:resourcetype><d:collection/></d:resourcetype>
            <d:getetag>&quot;5f2a&quot;</d:getetag><oc:fileid>17</oc:fileid></d:prop>
           <d:status>HTTP/1.1 200 OK</d:status></d:propstat>
         </d:response>
         <d:response>
          <d:href>/remote.php/dav/files/alice/Docs/a%20b%23c.txt</d:href>
          <d:propstat><d:prop><d:resourcetype/><d:getcontentlength>42</d:getcontentlength>
            <d:getetag>W/"abc-123"</d:getetag><oc:fileid>18</oc:fileid>
            <d:getlastmodified>Sun, 22 Nov 2026 13:45:01 GMT</d:getlastmodified></d:prop>
           <d:status>HTTP/1.1 200 OK</d:status></d:propstat>
          <d:propstat><d:prop><d:getcontentlength>999</d:getcontentlength></d:prop>
           <d:status>HTTP/1.1 404 Not Found</d:status></d:propstat>
         </d:response>
        </d:multistatus>
        """

    @Test("a Nextcloud-style answer gives folders, files, sizes, weak ETags and file ids")
    func nextcloudAnswer() throws {
        let responses = try MultistatusParser.parse(Data(Self.nextcloudStyle.utf8))
        #expect(responses.count == 2)
        #expect(responses[0].isCollection && responses[0].fileID == "17" && responses[0].etag == "\"5f2a\"")
        #expect(!responses[1].isCollection && responses[1].contentLength == 42)
        #expect(ETag(header: responses[1].etag!) == ETag(value: "abc-123", isWeak: true))
        let paths = try WebDAVPath(encodedBasePath: "/remote.php/dav/files/alice/")
        #expect(paths.remotePath(href: responses[1].href) == p("Docs/a b#c.txt"))
    }

    @Test("values lose the whitespace around them (newlines, tabs, Unicode spaces) and keep what is inside; elements of other namespaces are not read")
    func trimmedValues() throws {
        let body = """
            <?xml version="1.0"?>
            <D:multistatus xmlns:D="DAV:" xmlns:x="urn:other">
             <D:response>
              <D:href>
                /dav/a%20b.txt\t
              </D:href>
              <x:href>/dav/not-this</x:href>
              <D:propstat><D:prop><D:resourcetype/>
                <D:getcontentlength> 7 </D:getcontentlength>
                <D:getetag>\u{00A0}"in side"\u{2003}</D:getetag><x:getetag>"other"</x:getetag>
                <D:getlastmodified>Sun, 22 Nov 2026 13:45:01 GMT</D:getlastmodified></D:prop>
               <D:status>
                 HTTP/1.1 200 OK
               </D:status></D:propstat>
             </D:response>
            </D:multistatus>
            """
        let responses = try MultistatusParser.parse(Data(body.utf8))
        #expect(responses.count == 1)
        #expect(responses.first?.href == "/dav/a%20b.txt")
        #expect(responses.first?.contentLength == 7)
        #expect(responses.first?.etag == "\"in side\"")
        #expect(responses.first?.lastModified == "Sun, 22 Nov 2026 13:45:01 GMT")
        #expect(MultistatusParser.trimmed("\"abc\"") == "\"abc\"" && MultistatusParser.trimmed(" \n\"abc\" \r\n") == "\"abc\"")
        #expect(MultistatusParser.trimmed("") == "" && MultistatusParser.trimmed(" \t ") == "")
        // The same as Foundation's trimming, whatever is at the ends.
        let pieces = ["", " ", "\t", "\n", "\r\n", "\u{0B}", "\u{0C}", "\u{85}", "\u{A0}", "\u{2003}", "\u{3000}", "a", "é", "\"", "x y", "\u{1F}"]
        for head in pieces {
            for body in ["", "abc", "\"W/x\"", "a b", "é"] {
                for tail in pieces {
                    let text = head + body + tail
                    #expect(MultistatusParser.trimmed(text) == text.trimmingCharacters(in: .whitespacesAndNewlines), "\(Array(text.unicodeScalars))")
                }
            }
        }
    }

    @Test("Nextcloud's oc:checksums are kept as the server wrote them; Apache's 404 for them is no checksum")
    func checksums() throws {
        let body = """
            <?xml version="1.0"?>
            <d:multistatus xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">
             <d:response>
              <d:href>/remote.php/dav/files/alice/a.txt</d:href>
              <d:propstat><d:prop><d:resourcetype/><d:getcontentlength>3</d:getcontentlength><d:getetag>"e1"</d:getetag>
                <oc:checksums><oc:checksum>SHA1:a9993e364706816aba3e25717850c26c9cd0d89d MD5:900150983cd24fb0d6963f7d28e17f72</oc:checksum></oc:checksums>
               </d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat>
             </d:response>
             <d:response>
              <d:href>/remote.php/dav/files/alice/b.txt</d:href>
              <d:propstat><d:prop><d:resourcetype/><d:getcontentlength>3</d:getcontentlength><d:getetag>"e2"</d:getetag>
               </d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat>
              <d:propstat><d:prop><oc:checksums/></d:prop><d:status>HTTP/1.1 404 Not Found</d:status></d:propstat>
             </d:response>
            </d:multistatus>
            """
        let responses = try MultistatusParser.parse(Data(body.utf8))
        #expect(responses.count == 2)
        #expect(ContentChecksum.parse(responses[0].checksums ?? "").first
                == ContentChecksum(algorithm: .sha1, hex: "a9993e364706816aba3e25717850c26c9cd0d89d"))
        #expect(responses[1].checksums == nil)
    }

    @Test("broken documents are errors, never an empty listing", arguments: [
        "", "   ", "<a><b>x</b><b>y", "<a><b>x</a>", "<?xml version=\"1.0\"?><html><body>Login</body></html>",
        "<d:multistatus xmlns:d=\"DAV:\"><d:response><d:href>/x</d:href>", "&nope;",
    ])
    func brokenDocuments(body: String) {
        #expect(throws: ProviderError.self) { try MultistatusParser.parse(Data(body.utf8)) }
    }

    @Test("an entry the server could not describe fails the listing instead of vanishing", arguments: [
        """
        <d:multistatus xmlns:d="DAV:"><d:response><d:href>/dav/f</d:href>
        <d:propstat><d:prop><d:getcontentlength>5</d:getcontentlength></d:prop><d:status>HTTP/1.1 403 Forbidden</d:status></d:propstat>
        </d:response></d:multistatus>
        """,
        """
        <d:multistatus xmlns:d="DAV:"><d:response><d:href>/dav/sub/</d:href><d:status>HTTP/1.1 404 Not Found</d:status></d:response></d:multistatus>
        """,
        """
        <d:multistatus xmlns:d="DAV:"><d:response><d:href>/dav/f</d:href>
        <d:propstat><d:prop><d:getetag>"x"</d:getetag></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat>
        </d:response></d:multistatus>
        """,
    ])
    func undescribedEntry(body: String) {
        #expect(throws: ProviderError.self) { try MultistatusParser.parse(Data(body.utf8)) }
    }

    @Test("Apache's lowercase escapes and entities in hrefs decode to the same names")
    func apacheHrefs() throws {
        let body = """
            <D:multistatus xmlns:D="DAV:"><D:response><D:href>/dav/caf%c3%a9%20&amp;%20co</D:href>
            <D:propstat><D:prop><D:resourcetype/><D:getcontentlength>1</D:getcontentlength></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>
            </D:response></D:multistatus>
            """
        let responses = try MultistatusParser.parse(Data(body.utf8))
        let paths = try WebDAVPath(encodedBasePath: "/dav/")
        #expect(paths.remotePath(href: responses[0].href) == (try RemotePath(["caf\u{00E9} & co"])))
    }
}

@Suite("WebDAV paths")
struct WebDAVPathTests {
    let paths = try! WebDAVPath(encodedBasePath: "/dav/home%20dir/")

    @Test("names are percent-encoded byte by byte and decode back")
    func roundTrip() throws {
        let path = try RemotePath(["a b", "c#d?e&f%g'h\"i", "caf\u{00E9}", "cafe\u{0301}"])
        let encoded = paths.requestPath(path)
        #expect(encoded == "/dav/home%20dir/a%20b/c%23d%3Fe%26f%25g%27h%22i/caf%C3%A9/cafe%CC%81")
        #expect(paths.remotePath(href: encoded) == path)
        #expect(paths.remotePath(href: "http://127.0.0.1:8080" + encoded + "/") == path)
    }

    @Test("hrefs outside the base, with dot segments, bad escapes or bad UTF-8 are rejected", arguments: [
        "/other/x", "/dav/", "/dav/home%20dir/../x", "/dav/home%20dir/%ZZ", "/dav/home%20dir/%FF%FE", "/dav/home%20dir/a%2Fb",
        "/dav/home%20dir/" + String(repeating: "x", count: 256), "/dav/home%20dir/%2E%2E%2F%CC%81x", "/dav/home%20dir/%+F",
    ])
    func rejected(href: String) {
        #expect(paths.remotePath(href: href) == nil)
    }

    @Test("a base path with escapes is decoded once and re-encoded; a malformed one is refused")
    func basePaths() throws {
        let paths = try WebDAVPath(encodedBasePath: "/dav/alice/%23sync%20dir/")
        #expect(paths.baseComponents == ["dav", "alice", "#sync dir"])
        #expect(paths.requestPath(.root) == "/dav/alice/%23sync%20dir/")
        #expect(throws: ProviderError.self) { try WebDAVPath(encodedBasePath: "/dav/%zz/") }
    }

    @Test("the base itself is the root")
    func base() {
        #expect(paths.remotePath(href: "/dav/home%20dir/") == .root)
        #expect(paths.remotePath(href: "/dav/home dir") == .root)
    }
}

func p(_ text: String) -> RemotePath { try! RemotePath(string: text) }

@Suite("PROPFIND answers cut short")
struct CutMultistatusTests {
    /// rclone cuts a 207 short when an item vanishes while it walks (its answer had begun):
    /// such an answer is asked for again rather than refused as malformed.
    @Test("a 207 is whole only when it ends with the multistatus end tag, whatever its prefix and trailing space")
    func endsMultistatus() {
        let whole = #"<?xml version="1.0"?><D:multistatus xmlns:D="DAV:"><D:response><D:href>/a</D:href></D:response></D:multistatus>"#
        #expect(WebDAVStore.endsMultistatus(Data(whole.utf8)))
        #expect(WebDAVStore.endsMultistatus(Data((whole + "\r\n\n  ").utf8)))
        #expect(WebDAVStore.endsMultistatus(Data("<multistatus xmlns=\"DAV:\"></multistatus>".utf8)))
        #expect(WebDAVStore.endsMultistatus(Data(#"<D:multistatus xmlns:D="DAV:"/>"#.utf8)))
        #expect(WebDAVStore.endsMultistatus(Data("<D:multistatus xmlns:D=\"DAV:\"></D:multistatus >".utf8)))
        #expect(WebDAVStore.endsMultistatus(Data((whole + String(repeating: " ", count: 200)).utf8)))
        #expect(!WebDAVStore.endsMultistatus(Data((whole.dropLast(17) + "</D:response>").utf8)))
        #expect(!WebDAVStore.endsMultistatus(Data(whole.dropLast(1).utf8)))
        #expect(!WebDAVStore.endsMultistatus(Data(whole.prefix(60).utf8)))
        #expect(!WebDAVStore.endsMultistatus(Data()))
    }
}

@Suite("HTTP dates")
struct HTTPDateTests {
    @Test("IMF-fixdate is parsed by hand to the same instant a formatter gives")
    func fixdate() throws {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        for text in ["Sun, 06 Nov 1994 08:49:37 GMT", "Mon, 23 Nov 2026 18:49:42 GMT", "Thu, 29 Feb 2024 23:59:59 GMT",
                     "Thu, 01 Jan 1970 00:00:00 GMT", "Fri, 31 Dec 2100 12:00:00 GMT"] {
            #expect(HTTPDate.parse(text) == formatter.date(from: text), "\(text)")
        }
    }

    @Test("the obsolete forms still parse; garbage does not")
    func otherForms() {
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") != nil)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") != nil)
        for text in ["", "yesterday", "Sun, 06 Xyz 1994 08:49:37 GMT", "Sun, 36 Nov 1994 08:49:37 GMT"] {
            #expect(HTTPDate.parse(text) == nil, "\(text)")
        }
    }
}
