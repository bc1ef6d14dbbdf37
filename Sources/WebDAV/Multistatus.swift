import Foundation
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

/// Parses PROPFIND answers (with `MultistatusReader`). An empty body, a broken document,
/// an entry the server could not describe and a missing `multistatus` root are errors,
/// never an empty listing.
enum MultistatusParser {
    static let ownCloudNamespace = "http://owncloud.org/ns"
    static let tidesyncNamespace = "https://tidesync.org/ns/1"
    static let nextcloudNamespace = "http://nextcloud.org/ns"

    /// The responses in `data`; throws `cannotSynchronize` naming what is wrong.
    static func parse(_ data: Data) throws(ProviderError) -> [MultistatusResponse] {
        guard !data.isEmpty else {
            throw ProviderError(.cannotSynchronize, "the server sent an empty PROPFIND answer")
        }
        var reader = MultistatusReader()
        data.withUnsafeBytes { reader.feed($0) }
        switch reader.finish() {
        case .responses(let responses): return responses
        case .failed(let reason):
            throw ProviderError(.cannotSynchronize, "the server sent a malformed PROPFIND answer", underlying: reason)
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
}

/// The elements a PROPFIND answer is read for, by namespace and local name; any other is
/// `other`. (A listing has ten elements per entry: naming them without building a string
/// each keeps a 100 000-entry walk's parse to the bytes' own cost.)
enum MultistatusTag: Equatable {
    case multistatus, response, propstat, prop, status, href, resourcetype, collection
    case contentLength, etag, lastModified, fileID, symlinkTarget, checksums, checksum, hasPreview, other

    /// Whether the element's text is read (the others' is skipped).
    var holdsValue: Bool {
        switch self {
        case .href, .status, .contentLength, .etag, .lastModified, .fileID, .symlinkTarget, .checksum, .hasPreview: true
        default: false
        }
    }

    init(local name: UnsafeRawBufferPointer, namespace: MultistatusNamespace) {
        let candidates: [(StaticString, MultistatusTag)] = switch namespace {
        case .dav: Self.davNames
        case .ownCloud: Self.ownCloudNames
        case .tidesync: Self.tidesyncNames
        case .nextcloud: Self.nextcloudNames
        case .other: []
        }
        self = .other
        for (candidate, tag) in candidates where candidate.utf8CodeUnitCount == name.count
            && memcmp(candidate.utf8Start, name.baseAddress!, name.count) == 0 {
            self = tag
            return
        }
    }

    // Most frequent first: ten elements per entry, checked for every element of a listing.
    private static let davNames: [(StaticString, MultistatusTag)] = [
        ("prop", .prop), ("propstat", .propstat), ("status", .status), ("response", .response), ("href", .href),
        ("resourcetype", .resourcetype), ("getetag", .etag), ("getcontentlength", .contentLength),
        ("getlastmodified", .lastModified), ("collection", .collection), ("multistatus", .multistatus),
    ]
    private static let ownCloudNames: [(StaticString, MultistatusTag)] = [
        ("fileid", .fileID), ("checksums", .checksums), ("checksum", .checksum),
    ]
    private static let tidesyncNames: [(StaticString, MultistatusTag)] = [("symlink-target", .symlinkTarget)]
    private static let nextcloudNames: [(StaticString, MultistatusTag)] = [("has-preview", .hasPreview)]
}

/// The namespaces whose elements a PROPFIND answer is read for.
enum MultistatusNamespace {
    case dav, ownCloud, tidesync, nextcloud, other

    /// The namespace named `uri`.
    init(uri: String?) {
        self = switch uri {
        case "DAV:": .dav
        case MultistatusParser.ownCloudNamespace: .ownCloud
        case MultistatusParser.tidesyncNamespace: .tidesync
        case MultistatusParser.nextcloudNamespace: .nextcloud
        default: .other
        }
    }
}

/// Turns the elements of a PROPFIND answer, as a parser meets them, into responses. The
/// parser says where each element starts and ends, with the element it is in (`parent`)
/// and, at the end, the text it held (whole: the caller trims).
struct MultistatusAssembly {
    private(set) var responses: [MultistatusResponse] = []
    private(set) var failure: String?
    private(set) var sawRoot = false
    private var current: MultistatusResponse?
    private var pending = MultistatusResponse(href: "")
    private var propstatOK = false

    mutating func start(_ tag: MultistatusTag, parent: MultistatusTag?) {
        switch tag {
        case .multistatus: sawRoot = true
        case .response: current = MultistatusResponse(href: "")
        case .propstat:
            pending = MultistatusResponse(href: "")
            propstatOK = false
        case .collection where parent == .resourcetype:
            pending.isCollection = true
        default: break
        }
    }

    /// `text` is the element's text as it stands; values are read without the whitespace
    /// around them (`MultistatusParser.trimmed`), a symlink target as it is.
    mutating func end(_ tag: MultistatusTag, parent: MultistatusTag?, text: String) {
        let value = tag.holdsValue ? MultistatusParser.trimmed(text) : ""
        let inProp = parent == .prop
        switch tag {
        case .href where parent == .response: current?.href = value
        case .status where parent == .propstat:
            propstatOK = value.split(separator: " ").dropFirst().first == "200"
        case .contentLength where inProp: pending.contentLength = Int64(value)
        case .etag where inProp: pending.etag = value
        case .lastModified where inProp: pending.lastModified = value
        case .fileID where inProp: pending.fileID = value
        case .hasPreview where inProp: pending.hasPreview = value == "true" || value == "1"
        case .symlinkTarget where inProp: pending.symlinkTarget = text
        case .checksum where parent == .checksums && !value.isEmpty:
            pending.checksums = pending.checksums.map { $0 + " " + value } ?? value
        case .propstat: mergePropstat()
        case .status where parent == .response:
            fail("the server reported \(value) for \(current?.href ?? "an entry")")
        case .response: endResponse()
        default: break
        }
    }

    /// Records the first thing found wrong.
    mutating func fail(_ reason: String) {
        failure = failure ?? reason
    }

    private mutating func endResponse() {
        if let current {
            // An entry the server could not describe (403 on a subfolder, say) must fail
            // the listing: dropping it, or taking it for an empty file, would read as a
            // deletion.
            if current.href.isEmpty || !current.described {
                fail("the server gave no properties for \(current.href.isEmpty ? "an entry" : current.href)")
            } else if !current.isCollection, current.contentLength == nil {
                fail("the server gave no size for \(current.href)")
            } else {
                responses.append(current)
            }
        }
        current = nil
    }

    private mutating func mergePropstat() {
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
}
