import Foundation
import NIOHTTP1
import SyncEngine

/// Where a file's version comes from. Most servers list a `getetag` and send the same
/// value in `ETag` headers. nginx's WebDAV lists none (only `getlastmodified` and
/// `getcontentlength`) while its GET and HEAD answers carry an `ETag`: taking one source
/// for listings and another after writes made every pass see every file as changed. On
/// such a server (`listsVersions` false, found by the probe) a version is made from the
/// modification time and the size everywhere: in listings, after writes (HEAD) and for
/// downloads (GET's `Last-Modified` and size). A rename keeps both, so a file moved into
/// place keeps its version. Its limit, which nginx's own ETag shares: two writes of the
/// same size within one second look like one version.
extension WebDAVStore {
    /// `W/"tidesync-lm-<seconds since 1970>-<size>"`, or nil without both.
    static func madeVersion(modified: Date?, size: Int64?) -> ETag? {
        guard let modified, let size, size >= 0 else { return nil }
        return ETag(value: "tidesync-lm-\(Int64(modified.timeIntervalSince1970.rounded(.down)))-\(size)", isWeak: true)
    }

    /// True when versions are made from time and size (see above).
    var madeVersions: Bool { !listsVersions.withLock { $0 } }

    /// The version a listed file has: its `getetag`, else one made from its time and size.
    func listedVersion(_ response: MultistatusResponse, kind: ItemKind) -> ETag? {
        if let etag = response.etag.flatMap(ETag.init(header:)) { return etag }
        guard kind == .file else { return nil }
        return Self.madeVersion(modified: response.lastModified.flatMap(HTTPDate.parse), size: response.contentLength)
    }

    /// The version an answer to GET, HEAD or PUT names: its `OC-ETag` or `ETag`, or on a
    /// server whose listings carry no ETag one made from `Last-Modified` and the whole
    /// file's size (a 206's `Content-Range` total, else `Content-Length` of a 200).
    func servedVersion(_ headers: HTTPHeaders, status: UInt) -> ETag? {
        guard madeVersions else {
            return (headers.first(name: "OC-ETag") ?? headers.first(name: "ETag")).flatMap(ETag.init(header:))
        }
        let size = status == 206 ? Self.contentRange(headers.first(name: "Content-Range"))?.total
            : status == 200 ? headers.first(name: "Content-Length").flatMap { Int64($0) } : nil
        return Self.madeVersion(modified: headers.first(name: "Last-Modified").flatMap(HTTPDate.parse), size: size)
    }
}
