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
    /// True once a propstat with status 200 described this response.
    var described = false
}

/// Parses PROPFIND answers. FoundationXML's `XMLParser.parse()` returns true for some
/// broken documents on Linux, so errors are collected from the delegate and an empty
/// body or a missing `multistatus` root is an error too.
final class MultistatusParser: NSObject, XMLParserDelegate {
    static let ownCloudNamespace = "http://owncloud.org/ns"
    static let tidesyncNamespace = "https://tidesync.org/ns/1"

    private(set) var responses: [MultistatusResponse] = []
    private var current: MultistatusResponse?
    private var pending = MultistatusResponse(href: "")
    private var propstatOK = false
    private var text = ""
    private var path: [String] = []
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

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?,
                qualifiedName: String?, attributes: [String: String] = [:]) {
        let key = (namespaceURI ?? "") + " " + name
        path.append(key)
        text = ""
        switch key {
        case "DAV: multistatus": sawRoot = true
        case "DAV: response": current = MultistatusResponse(href: "")
        case "DAV: propstat":
            pending = MultistatusResponse(href: "")
            propstatOK = false
        case "DAV: collection" where path.dropLast().last == "DAV: resourcetype":
            pending.isCollection = true
        default: break
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        let key = (namespaceURI ?? "") + " " + name
        let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
        path.removeLast()
        let inProp = path.last == "DAV: prop"
        switch key {
        case "DAV: href" where path.last == "DAV: response": current?.href = value
        case "DAV: status" where path.last == "DAV: propstat":
            propstatOK = value.split(separator: " ").dropFirst().first == "200"
        case "DAV: getcontentlength" where inProp: pending.contentLength = Int64(value)
        case "DAV: getetag" where inProp: pending.etag = value
        case "DAV: getlastmodified" where inProp: pending.lastModified = value
        case "\(Self.ownCloudNamespace) fileid" where inProp: pending.fileID = value
        case "\(Self.tidesyncNamespace) symlink-target" where inProp: pending.symlinkTarget = text
        case "\(Self.ownCloudNamespace) checksum" where path.last == "\(Self.ownCloudNamespace) checksums" && !value.isEmpty:
            pending.checksums = pending.checksums.map { $0 + " " + value } ?? value
        case "DAV: propstat": mergePropstat()
        case "DAV: status" where path.last == "DAV: response":
            failure = failure ?? "the server reported \(value) for \(current?.href ?? "an entry")"
        case "DAV: response":
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
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: Error) {
        failure = failure ?? "XML error \((parseError as NSError).code)"
    }
}
