import Foundation
import FoundationXML
import SyncEngine
@testable import WebDAV

/// Parses a PROPFIND answer with FoundationXML (libxml2), as tidesync did before its own
/// reader: the reference the reader's tests compare with, for answers servers send. (Not
/// for hostile ones: it crashes on some.) Its `XMLParser.parse()` returns true for some
/// broken documents on Linux, so errors are collected from the delegate as well.
final class FoundationMultistatusParser: NSObject, XMLParserDelegate {
    private var assembly = MultistatusAssembly()
    private var text = ""
    private var path: [MultistatusTag] = []

    static func parse(_ data: Data) throws(ProviderError) -> [MultistatusResponse] {
        let delegate = FoundationMultistatusParser()
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = true
        parser.shouldResolveExternalEntities = false
        parser.delegate = delegate
        let ok = parser.parse()
        if !ok || parser.parserError != nil || delegate.assembly.failure != nil || !delegate.assembly.sawRoot {
            let reason = delegate.assembly.failure ?? parser.parserError.map { "\($0.localizedDescription)" }
                ?? "no multistatus element"
            throw ProviderError(.cannotSynchronize, "the server sent a malformed PROPFIND answer",
                                underlying: "\(reason) at line \(parser.lineNumber)")
        }
        return delegate.assembly.responses
    }

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?,
                qualifiedName: String?, attributes: [String: String] = [:]) {
        let tag = MultistatusTag(name, namespace: namespaceURI)
        assembly.start(tag, parent: path.last)
        path.append(tag)
        text = ""
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

    func parser(_ parser: XMLParser, foundCDATA block: Data) { text += String(decoding: block, as: UTF8.self) }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        let tag = path.removeLast()
        assembly.end(tag, parent: path.last, text: text)
        text = ""
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: Error) {
        assembly.fail("XML error \((parseError as NSError).code)")
    }
}

extension MultistatusTag {
    init(_ name: String, namespace: String?) {
        self = Array(name.utf8).withUnsafeBytes { MultistatusTag(local: $0, namespace: MultistatusNamespace(uri: namespace)) }
    }

}
