// Nextcloud's previews of a server's files (issue 17's third source of thumbnails): a picture
// with no embedded preview and too large to fetch whole may still have one the server made,
// a few KiB. Built against Nextcloud's documented protocol and tested against a fake server
// playing it, not against a live Nextcloud:
//   - PROPFIND Depth 0 asking `d:getetag`, `oc:fileid` and `nc:has-preview`
//     (https://docs.nextcloud.com/server/latest/developer_manual/client_apis/WebDAV/basic.html);
//   - GET `<base>/index.php/core/preview?fileId=<id>&x=<n>&y=<n>&a=1` with the same
//     credentials (the preview endpoint of Nextcloud's web UI and its desktop and mobile
//     clients; `a=1` keeps the aspect ratio), where `<base>` is the part of the WebDAV URL
//     before `/remote.php/`.
// Only a remote URL under `/remote.php/` (Nextcloud, ownCloud) is asked; ownCloud answers the
// GET with an error, which reads as "no preview".
import Foundation
import NIOCore
import SyncEngine

extension WebDAVStore: ServerPreviews {
    static let previewPropfindBody = """
        <?xml version="1.0" encoding="utf-8"?>
        <d:propfind xmlns:d="DAV:" xmlns:oc="\(MultistatusParser.ownCloudNamespace)" xmlns:nc="\(MultistatusParser.nextcloudNamespace)">
        <d:prop><d:resourcetype/><d:getcontentlength/><d:getetag/><oc:fileid/><nc:has-preview/></d:prop>
        </d:propfind>
        """

    /// The largest preview taken, in bytes.
    static let maximumPreview = 4 << 20

    /// Where the server serves `index.php`: the remote URL's path before `/remote.php/`;
    /// nil for a server that is no Nextcloud or ownCloud.
    var previewBase: String? {
        guard let range = paths.basePath.range(of: "/remote.php/") else { return nil }
        return String(paths.basePath[..<range.lowerBound])
    }

    public func serverPreview(of path: RemotePath, version: ETag, longSide: Int) async throws(ProviderError) -> [UInt8]? {
        guard let base = previewBase else { return nil }
        var propfind = connection.request("PROPFIND", path: paths.requestPath(path),
                                          headers: [("Depth", "0"), ("Content-Type", "application/xml; charset=utf-8")])
        propfind.body = .bytes(ByteBuffer(string: Self.previewPropfindBody))
        let described = try await connection.send(propfind)
        _ = try entries(of: described, for: path, method: "PROPFIND")  // a 207 that describes it, or the usual error
        guard let item = try MultistatusParser.parse(described.body).first(where: { paths.remotePath(href: $0.href) == path }),
              let entry = entry(from: item) else { return nil }
        guard entry.etag.map({ $0.sameValue(as: version) }) == true else {
            throw ProviderError(.versionNoLongerAvailable, "\(path) changed on the server; version \(version) is gone")
        }
        guard item.hasPreview == true, let id = item.fileID, !id.isEmpty, id.count <= 20, id.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            return nil
        }
        let side = max(16, min(longSide, 2048))
        let get = connection.request("GET", path: "\(base)/index.php/core/preview?fileId=\(id)&x=\(side)&y=\(side)&a=1",
                                     headers: [("Accept", "image/png, image/jpeg")])
        let answer = try await connection.send(get)
        guard answer.status.code == 200, answer.body.count <= Self.maximumPreview else {
            logger.debug("no server preview of \(path): HTTP \(answer.status.code), \(answer.body.count) bytes")
            return nil
        }
        let bytes = [UInt8](answer.body)
        // A PNG or a JPEG, nothing else (an HTML login page answered 200 is no preview).
        guard bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) || bytes.starts(with: [0xFF, 0xD8, 0xFF]) else {
            logger.debug("no server preview of \(path): the answer is no PNG or JPEG")
            return nil
        }
        return bytes
    }
}
