import Foundation
import FoundationXML
import SyncEngine

/// One `<d:response>` of a 207 Multi-Status answer, with the properties of its
/// `propstat` blocks whose status was 200.
struct MultistatusResponse: Sendable {
    var href: String
    var isCollection = false
    var contentLength: Int64?
    var etag: String?
    var lastModified: String?
    var fileID: String?
    var symlinkTarget: String?
    /// `oc:checksums`: the `oc:checksum` values, space-separated.
    var checksums: String?
    /// `nc:has-preview` (Nextcloud): whether the server can make a preview of the file.
    var hasPreview: Bool?
    /// True once a propstat with status 200 described this response.
    var described = false
}

/// Parses PROPFIND answers. FoundationXML's `XMLParser.parse()` returns true for some
/// broken documents on Linux, so errors are collected from the delegate and an empty
/// body or a missing `multistatus` root is an error too.
final class MultistatusParser: NSObject, XMLParserDelegate {
    static let ownCloudNamespace = "http://owncloud.org/ns"
    static let tidesyncNamespace = "https://tidesync.org/ns/1"
    static let nextcloudNamespace = "http://nextcloud.org/ns"

    private(set) var responses: [MultistatusResponse] = []
    private var current: MultistatusResponse?
    private var pending = MultistatusResponse(href: "")
    private var propstatOK = false
    private var text = ""
    private var path: [Tag] = []
    private var sawRoot = false
    private var failure: String?

    /// The responses in `data`; throws `cannotSynchronize` naming what is wrong.
    static func parse(_ data: Data) throws(ProviderError) -> [MultistatusResponse] {
        guard !data.isEmpty else {
            throw ProviderError(.cannotSynchronize, "the server sent an empty PROPFIND answer")
        }
        let delegate = MultistatusParser()
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = true
        parser.shouldResolveExternalEntities = false
        parser.delegate = delegate
        let ok = parser.parse()
        if !ok || parser.parserError != nil || delegate.failure != nil || !delegate.sawRoot {
            let reason = delegate.failure ?? parser.parserError.map { "\($0.localizedDescription)" }
                ?? "no multistatus element"
            throw ProviderError(.cannotSynchronize, "the server sent a malformed PROPFIND answer",
                                underlying: "\(reason) at line \(parser.lineNumber)")
        }
        return delegate.responses
    }

    /// The elements the parser looks at, by namespace and local name; any other is `other`.
    /// (A listing has ten elements per entry: naming them without building a string each
    /// keeps a 100 000-entry walk's parse to the XML's own cost.)
    enum Tag: Equatable {
        case multistatus, response, propstat, prop, status, href, resourcetype, collection
        case contentLength, etag, lastModified, fileID, symlinkTarget, checksums, checksum, hasPreview, other

        init(_ name: String, namespace: String?) {
            switch namespace {
            case "DAV:":
                switch name {
                case "multistatus": self = .multistatus
                case "response": self = .response
                case "propstat": self = .propstat
                case "prop": self = .prop
                case "status": self = .status
                case "href": self = .href
                case "resourcetype": self = .resourcetype
                case "collection": self = .collection
                case "getcontentlength": self = .contentLength
                case "getetag": self = .etag
                case "getlastmodified": self = .lastModified
                default: self = .other
                }
            case MultistatusParser.ownCloudNamespace:
                switch name {
                case "fileid": self = .fileID
                case "checksums": self = .checksums
                case "checksum": self = .checksum
                default: self = .other
                }
            case MultistatusParser.tidesyncNamespace:
                self = name == "symlink-target" ? .symlinkTarget : .other
            case MultistatusParser.nextcloudNamespace:
                self = name == "has-preview" ? .hasPreview : .other
            default: self = .other
            }
        }
    }

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?,
                qualifiedName: String?, attributes: [String: String] = [:]) {
        let tag = Tag(name, namespace: namespaceURI)
        path.append(tag)
        text = ""
        switch tag {
        case .multistatus: sawRoot = true
        case .response: current = MultistatusResponse(href: "")
        case .propstat:
            pending = MultistatusResponse(href: "")
            propstatOK = false
        case .collection where path.dropLast().last == .resourcetype:
            pending.isCollection = true
        default: break
        }
    }

    /// `text` without the whitespace around it, as `trimmingCharacters(in:
    /// .whitespacesAndNewlines)` gives it. ASCII whitespace (what servers indent with) is cut
    /// here; Foundation's bridged trimming, slow per element, runs only when a non-ASCII
    /// character is at an end (it may be a Unicode space).
    static func trimmed(_ text: String) -> String {
        let bytes = text.utf8
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || (0x09...0x0D).contains($0) }
        guard let start = bytes.firstIndex(where: { !isSpace($0) }) else { return "" }
        let end = bytes.lastIndex(where: { !isSpace($0) })!
        guard bytes[start] < 0x80, bytes[end] < 0x80 else { return text.trimmingCharacters(in: .whitespacesAndNewlines) }
        if start == bytes.startIndex, bytes.index(after: end) == bytes.endIndex { return text }
        return String(text[start...end])
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        let tag = path.removeLast()
        let value = Self.trimmed(text)
        let inProp = path.last == .prop
        switch tag {
        case .href where path.last == .response: current?.href = value
        case .status where path.last == .propstat:
            propstatOK = value.split(separator: " ").dropFirst().first == "200"
        case .contentLength where inProp: pending.contentLength = Int64(value)
        case .etag where inProp: pending.etag = value
        case .lastModified where inProp: pending.lastModified = value
        case .fileID where inProp: pending.fileID = value
        case .hasPreview where inProp: pending.hasPreview = value == "true" || value == "1"
        case .symlinkTarget where inProp: pending.symlinkTarget = text
        case .checksum where path.last == .checksums && !value.isEmpty:
            pending.checksums = pending.checksums.map { $0 + " " + value } ?? value
        case .propstat: mergePropstat()
        case .status where path.last == .response:
            failure = failure ?? "the server reported \(value) for \(current?.href ?? "an entry")"
        case .response:
            if let current {
                // An entry the server could not describe (403 on a subfolder, say) must
                // fail the listing: dropping it, or taking it for an empty file, would
                // read as a deletion.
                if current.href.isEmpty || !current.described {
                    failure = failure ?? "the server gave no properties for \(current.href.isEmpty ? "an entry" : current.href)"
                } else if !current.isCollection, current.contentLength == nil {
                    failure = failure ?? "the server gave no size for \(current.href)"
                } else {
                    responses.append(current)
                }
            }
            current = nil
        default: break
        }
        text = ""
    }

    private func mergePropstat() {
        guard propstatOK, current != nil else { return }
        current!.described = true
        if pending.isCollection { current!.isCollection = true }
        current!.contentLength = pending.contentLength ?? current!.contentLength
        current!.etag = pending.etag ?? current!.etag
        current!.lastModified = pending.lastModified ?? current!.lastModified
        current!.fileID = pending.fileID ?? current!.fileID
        current!.symlinkTarget = pending.symlinkTarget ?? current!.symlinkTarget
        current!.checksums = pending.checksums ?? current!.checksums
        current!.hasPreview = pending.hasPreview ?? current!.hasPreview
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: Error) {
        failure = failure ?? "XML error \((parseError as NSError).code)"
    }
}
