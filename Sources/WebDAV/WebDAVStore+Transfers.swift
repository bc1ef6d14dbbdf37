#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import AsyncHTTPClient
import Foundation
import NIOCore
import SyncEngine

extension WebDAVStore {
    public func download(_ path: RemotePath, range: ByteRange?, version: ETag?, to destination: URL,
                         progress: TransferProgress?) async throws(ProviderError) -> ETag? {
        if let range, range.isEmpty { return version }
        var headers: [(String, String)] = []
        if let header = range?.httpRangeHeader { headers.append(("Range", header)) }
        let request = connection.request("GET", path: paths.requestPath(path), headers: headers)
        let response = try await connection.stream(request)
        let etag = response.headers.first(name: "ETag").flatMap(ETag.init(header:))
        guard [200, 206, 416].contains(response.status.code) else { throw response.status.providerError("GET", path) }
        // The response's own ETag says which version the bytes belong to; comparing it
        // instead of sending If-Match avoids Apache's spurious 412 on weak tags.
        if let version, let etag, !etag.sameValue(as: version) {
            throw ProviderError(.versionMismatch, "\(path) changed on the server since version \(version)")
        }
        let fd = open(destination.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ProviderError(.cannotSynchronize, "cannot create \(destination.path)", underlying: String(cString: strerror(errno)))
        }
        defer { close(fd) }
        // 416: the range starts at or after the end, so there is nothing to write.
        if response.status.code == 416 { return etag ?? version }
        let ignoredRange = response.status.code == 200 && range != nil
        var writer = ChunkWriter(descriptor: fd, skip: ignoredRange ? range!.offset : 0,
                                 limit: range.map(\.length))
        let sent = response.headers.first(name: "Content-Length").flatMap { Int64($0) }
        var received: Int64 = 0
        do {
            for try await chunk in response.body {
                received += Int64(chunk.readableBytes)
                try writer.write(chunk)
                progress?(writer.written, range?.length ?? sent)
                if writer.isComplete, ignoredRange { break }
            }
        } catch {
            throw WebDAVConnection.map(error, method: "GET")
        }
        if let sent, received < sent, !(ignoredRange && writer.isComplete) {
            throw ProviderError(.serverUnreachable, "the download of \(path) ended early (\(received) of \(sent) bytes); will retry")
        }
        guard fsync(fd) == 0 else {
            throw ProviderError(.cannotSynchronize, "cannot write \(destination.path)", underlying: String(cString: strerror(errno)))
        }
        return etag ?? version
    }

    public func upload(from source: URL, to path: RemotePath, condition: WriteCondition,
                       progress: TransferProgress?) async throws(ProviderError) -> RemoteEntry {
        let fd = open(source.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw ProviderError(.cannotSynchronize, "cannot open \(source.path) for upload", underlying: String(cString: strerror(errno)))
        }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            throw ProviderError(.cannotSynchronize, "cannot read \(source.path)", underlying: String(cString: strerror(errno)))
        }
        let size = Int64(status.st_size)
        try await guarded("PUT", path, condition: condition) { () throws(ProviderError) in
            var request = connection.request("PUT", path: paths.requestPath(path),
                                             headers: condition.headers + [("Content-Type", "application/octet-stream")])
            request.body = .stream(FileChunks(descriptor: fd, length: size, chunkSize: 256 << 10, progress: progress),
                                   length: .known(size))
            let response = try await connection.stream(request)
            do { _ = try await response.body.collect(upTo: 1 << 20) } catch {}
            return response.status
        }
        var entry = try await entry(at: path)
        // PUT answers carry no ETag on Apache, so the version comes from a PROPFIND. If the
        // size differs, another client wrote in between: leave the version unknown so the
        // next pass looks again rather than taking their version for ours.
        if entry.size != size { entry.etag = nil }
        return entry
    }

    public func makeFolder(at path: RemotePath) async throws(ProviderError) -> RemoteEntry {
        let response = try await connection.send(connection.request("MKCOL", path: paths.requestPath(path, isFolder: true)))
        switch response.status.code {
        case 201: return try await entry(at: path)
        case 405: throw ProviderError(.filenameCollision, "\(path) already exists on the server")
        default: throw response.status.providerError("MKCOL", path)
        }
    }

    public func makeSymlink(at path: RemotePath, target: String,
                            condition: WriteCondition) async throws(ProviderError) -> RemoteEntry {
        // Servers have no symlinks: a small file holding the target, marked by a dead
        // property, written under a temporary name and moved into place so no client
        // sees it unmarked.
        let temporary = try path.parent.appending(Self.temporaryPrefix + UUID().uuidString)
        var put = connection.request("PUT", path: paths.requestPath(temporary), headers: [("If-None-Match", "*")])
        put.body = .bytes(ByteBuffer(string: target))
        let created = try await connection.send(put)
        guard (200..<300).contains(created.status.code) else { throw created.status.providerError("PUT", path) }
        do {
            try await setSymlinkProperty(temporary, target: target)
            if case .mustMatch(let version) = condition { try await delete(path, version: version) }
            return try await move(temporary, to: path, version: nil)
        } catch {
            _ = try? await connection.send(connection.request("DELETE", path: paths.requestPath(temporary)))
            throw error
        }
    }

    func setSymlinkProperty(_ path: RemotePath, target: String) async throws(ProviderError) {
        let escaped = target.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
        let body = """
            <?xml version="1.0" encoding="utf-8"?>
            <d:propertyupdate xmlns:d="DAV:" xmlns:ts="\(MultistatusParser.tidesyncNamespace)">
            <d:set><d:prop><ts:symlink-target>\(escaped)</ts:symlink-target></d:prop></d:set></d:propertyupdate>
            """
        var request = connection.request("PROPPATCH", path: paths.requestPath(path),
                                         headers: [("Content-Type", "application/xml; charset=utf-8")])
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await connection.send(request)
        let text = String(decoding: response.body, as: UTF8.self)
        guard response.status.code == 207 || response.status.code == 200, !text.contains(" 403 "), !text.contains(" 409 ") else {
            throw ProviderError(.cannotSynchronize, "the server cannot store symlinks (PROPPATCH refused)",
                                underlying: "HTTP \(response.status.code)")
        }
    }
}

extension WriteCondition {
    /// The conditional request headers for this condition.
    var headers: [(String, String)] {
        switch self {
        case .mustNotExist: [("If-None-Match", "*")]
        case .mustMatch(let version): [("If-Match", version.strongHeaderValue)]
        }
    }
}
