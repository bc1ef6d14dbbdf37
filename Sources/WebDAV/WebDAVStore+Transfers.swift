import Glibc
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SyncEngine
import SystemCalls

extension WebDAVStore {
    public func download(_ path: RemotePath, range: ByteRange?, version: ETag?, to destination: URL,
                         progress: TransferProgress?) async throws(ProviderError) -> ETag? {
        if let range, range.isEmpty { return version }
        var headers: [(String, String)] = []
        if let header = range?.httpRangeHeader { headers.append(("Range", header)) }
        let request = connection.request("GET", path: paths.requestPath(path), headers: headers)
        let meter = TransferMeter()
        return try await connection.stream(request, meter: meter) { response in
            try await self.receive(response, of: path, range: range, version: version, to: destination,
                                   meter: meter, progress: progress)
        }
    }

    /// Writes `range` of `path` into `descriptor` at the range's offsets (see the protocol).
    public func download(_ path: RemotePath, range: ByteRange, version: ETag, intoDescriptor descriptor: Int32,
                         progress: TransferProgress?) async throws(ProviderError) -> Int64 {
        if range.isEmpty { return 0 }
        let header = range.httpRangeHeader.map { [("Range", $0)] } ?? []
        let request = connection.request("GET", path: paths.requestPath(path), headers: header)
        let meter = TransferMeter()
        return try await connection.stream(request, meter: meter) { response in
            _ = try await self.accept(response, of: path, range: range, version: version)
            return try await self.receiveBody(response, of: path, range: range, into: descriptor, at: range.offset,
                                              meter: meter, progress: progress)
        }
    }

    /// Checks the answer to a GET and writes its body to `destination`; returns the
    /// version the bytes belong to.
    func receive(_ response: HTTPClientResponse, of path: RemotePath, range: ByteRange?, version: ETag?, to destination: URL,
                 meter: TransferMeter, progress: TransferProgress?) async throws(ProviderError) -> ETag? {
        let etag = try await accept(response, of: path, range: range, version: version)
        let fd = open(destination.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ChunkWriter.localError(errno, "cannot create \(destination.path)") }
        defer { close(fd) }
        // 416: the range starts at or after the end, so there is nothing to write.
        if response.status.code == 416 { return etag ?? version }
        _ = try await receiveBody(response, of: path, range: range, into: fd, at: 0, meter: meter, progress: progress)
        TransferSlot.release()
        let failure = TransferSlot.callerSyncs ? 0 : await OffPool.fsync(fd)
        guard failure == 0 else { throw ChunkWriter.localError(failure, "cannot write \(destination.path)") }
        return etag ?? version
    }

    /// Checks the head of the answer to a GET of `range` of `path` (its status, and that it
    /// holds `version` and the bytes asked for); returns the version the answer names.
    func accept(_ response: HTTPClientResponse, of path: RemotePath, range: ByteRange?,
                version: ETag?) async throws(ProviderError) -> ETag? {
        let etag = servedVersion(response.headers, status: response.status.code)
        // Apache answers 403 ("file permissions deny server access") for a file another
        // client deleted between its check and its open: gone, not forbidden.
        if response.status.code == 403, try await !exists(path) {
            throw ProviderError(.noSuchItem, "\(path) was deleted on the server while it was read", underlying: "HTTP 403")
        }
        guard [200, 206, 416].contains(response.status.code) else { throw response.status.providerError("GET", path) }
        if let version { try await check(response, of: path, isVersion: version, etag: etag, whole: range == nil) }
        if response.status.code == 206, let range,
           let start = Self.contentRangeStart(response.headers.first(name: "Content-Range")), start != range.offset {
            throw ProviderError(.cannotSynchronize, "the server answered a range request for \(path) with other bytes",
                                underlying: "Content-Range starts at \(start), not \(range.offset)")
        }
        return etag
    }

    /// Writes the body of an accepted answer into `fd` from `offset` on (the bytes before
    /// the range skipped when the server sent the whole file); returns the bytes written.
    func receiveBody(_ response: HTTPClientResponse, of path: RemotePath, range: ByteRange?, into fd: Int32, at offset: Int64,
                     meter: TransferMeter, progress: TransferProgress?) async throws(ProviderError) -> Int64 {
        if response.status.code == 416 { return 0 }
        let ignoredRange = response.status.code == 200 && range != nil
        var writer = ChunkWriter(descriptor: fd, base: offset, skip: ignoredRange ? range!.offset : 0,
                                 limit: range.map(\.length))
        let sent = response.headers.first(name: "Content-Length").flatMap { Int64($0) }
        var received: Int64 = 0
        do {
            for try await chunk in response.body {
                received += Int64(chunk.readableBytes)
                meter.add(chunk.readableBytes)
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
        return writer.written
    }

    /// Throws `versionMismatch` unless the answer to a GET holds `version` of `path`
    /// (`whole`: a GET of the whole file, or of the rest of a part, whose 200 is the whole).
    ///
    /// The response's own ETag says which version the bytes belong to; comparing it
    /// instead of sending If-Match avoids Apache's spurious 412 on weak tags. An answer
    /// without one (Apache's 416 has none) is checked by a fresh PROPFIND.
    func check(_ response: HTTPClientResponse, of path: RemotePath, isVersion version: ETag, etag: ETag?,
                       whole: Bool) async throws(ProviderError) {
        var served = etag
        var listed: RemoteEntry?
        if served == nil {
            listed = try await entry(at: path)
            served = listed?.etag
        }
        guard let served, served.sameValue(as: version) else {
            throw ProviderError(.versionMismatch, "\(path) changed on the server since version \(version)")
        }
        // lighttpd sends no ETag with a GET and, for a second after a change it did not
        // make itself, the length from its stat cache: the first bytes of the new
        // version cut at the old length. A whole-file answer whose length is not the
        // listed size is not the version asked for.
        if whole, response.status.code == 200, let listed,
           let length = response.headers.first(name: "Content-Length").flatMap({ Int64($0) }), length != listed.size {
            throw ProviderError(.versionMismatch, "\(path) changed on the server while it was read",
                                underlying: "\(length) bytes sent for a version of \(listed.size)")
        }
    }

    public func upload(from source: URL, to path: RemotePath, condition: WriteCondition,
                       progress: TransferProgress?) async throws(ProviderError) -> RemoteEntry {
        let file = try OpenFile(reading: source.path)
        let before = try file.status()
        if try await movesUploads(to: path) {
            return try await uploadViaTemporary(file, before, to: path, condition: condition, progress: progress)
        }
        var headerETag: ETag?
        var created = false
        do {
            try await guarded("PUT", path, condition: condition) { () throws(ProviderError) in
                let (status, etag) = try await putFile(file, before, at: path, headers: condition.headers, progress: progress)
                headerETag = etag
                created = status.code == 201
                return status
            }
        } catch {
            // The body was cut short before its end because the file changed while it was
            // read: nothing landed. (Once the request went through, a later change does not
            // matter: every byte sent was read from one version, and that version is what
            // the caller's recorded stat stands for or predates.)
            if try file.status() != before {
                throw ProviderError(.cannotSynchronize, "\(source.path) changed while it was uploaded; it will be sent again")
            }
            throw error
        }
        if created, case .mustMatch = condition {
            try await undoUnguardedCreate(path, etag: headerETag)
        }
        do {
            var entry = try await uploadedEntry(at: path)
            // Apache's PUT answers carry no ETag, so the version comes from this HEAD.
            // If the size differs another client wrote in between: leave the version
            // unknown so the next pass looks again rather than taking theirs for ours.
            if entry.size != before.size || (headerETag != nil && entry.etag.map { !$0.sameValue(as: headerETag!) } ?? true) {
                entry.etag = headerETag
            }
            return entry
        } catch where Self.landedAnyway(error) {
            // The upload landed; only its version is unknown. Say so rather than fail
            // (a retry would 412 against our own write and look like a conflict).
            return RemoteEntry(path: path, kind: .file, size: before.size, etag: headerETag)
        }
    }

    /// True when reading back the version of a write that landed failed in a way that
    /// leaves the write done: the server did not answer, the request was cancelled, or the
    /// item is no longer there (another client moved or deleted it, or its folder, right
    /// after; the next walk finds it where it went, with the bytes we sent).
    static func landedAnyway(_ error: ProviderError) -> Bool {
        error.code == .serverUnreachable || error.code == .cancelled || error.code == .noSuchItem
    }

    /// A PUT with `If-Match` answered 201 Created: the file was not there, and the server
    /// (WsgiDAV) checks `If-Match` only on files that exist. The file it made is deleted
    /// again, guarded by its own version, and the write fails as it does elsewhere.
    func undoUnguardedCreate(_ path: RemotePath, etag: ETag?) async throws(ProviderError) {
        var known = etag
        if known == nil { known = (try? await uploadedEntry(at: path))?.etag }
        if let etag = known {
            let request = connection.request("DELETE", path: paths.requestPath(path), headers: WriteCondition.mustMatch(etag).headers)
            if let status = try? await connection.send(request).status, !(200..<300).contains(status.code) {
                logger.warning("could not delete \(path), made by a guarded PUT on a server that ignored If-Match for a missing file (DELETE answered \(status.code))")
            }
        }
        throw ProviderError(.noSuchItem, "\(path) no longer exists on the server", underlying: "HTTP 201 to a PUT with If-Match")
    }

    /// PUTs the bytes of `file` (streamed, cut short if it changes meanwhile) to `path`;
    /// returns the status and the ETag the answer named, if any.
    ///
    /// A PUT whose connection the server closed before answering anything (a kept-alive
    /// connection it dropped as the request went out: cheroot, under WsgiDAV, closes idle
    /// ones beyond its limit) is sent once more on a new connection. That is safe because
    /// every PUT is guarded or lands at a temporary name: had the first one landed, the
    /// second finds the version changed (412) and the next plan compares the bytes.
    func putFile(_ file: OpenFile, _ before: OpenFile.Status, at path: RemotePath, headers: [(String, String)],
                 progress: TransferProgress?) async throws(ProviderError) -> (HTTPResponseStatus, ETag?) {
        var attempt = 0
        while true {
            attempt += 1
            var request = connection.request("PUT", path: paths.requestPath(path),
                                             headers: headers + [("Content-Type", "application/octet-stream")])
            let meter = TransferMeter()
            request.body = .stream(FileChunks(file: file, length: before.size, chunkSize: 256 << 10, progress: progress,
                                              unchanged: before, meter: meter),
                                   length: .known(before.size))
            do {
                return try await connection.stream(request, meter: meter) { response in
                    do { _ = try await response.body.collect(upTo: 1 << 20) } catch {}
                    return (response.status, self.servedVersion(response.headers, status: 0))
                }
            } catch where attempt == 1 && error.underlying?.hasPrefix(WebDAVConnection.closedUnanswered) == true
                            && (try? file.status()) == before {
                logger.info("the server closed the connection of the PUT of \(path) before it answered; sending it again")
                continue
            }
        }
    }

    /// The entry of a file just uploaded, from a HEAD: Apache's PROPFIND opens the
    /// dead-property DB of every resource it describes and costs as much as the PUT itself,
    /// a HEAD does not. Falls back to PROPFIND when the answer lacks a version or a size.
    func uploadedEntry(at path: RemotePath) async throws(ProviderError) -> RemoteEntry {
        let response = try await connection.send(connection.request("HEAD", path: paths.requestPath(path)))
        guard response.status.code == 200,
              let etag = servedVersion(response.headers, status: response.status.code),
              let size = response.headers.first(name: "Content-Length").flatMap({ Int64($0) }), size >= 0 else {
            return try await entry(at: path)
        }
        return RemoteEntry(path: path, kind: .file, size: size, etag: etag,
                           fileID: response.headers.first(name: "OC-FileId"),
                           modificationDate: response.headers.first(name: "Last-Modified").flatMap(HTTPDate.parse))
    }

    public func makeFolder(at path: RemotePath) async throws(ProviderError) -> RemoteEntry {
        if try await movesUploads(to: path) {
            // MKCOL of an existing folder answers 201 there: make a temporary, move it into place.
            let temporary = try temporary(beside: path)
            let response = try await connection.send(connection.request("MKCOL", path: paths.requestPath(temporary, isFolder: true)))
            switch response.status.code {
            case 201: break
            case 404, 409: throw ProviderError(.parentMissing, "the folder \(path.parent) does not exist on the server")
            default: throw response.status.providerError("MKCOL", path)
            }
            try await place(temporary, at: path, condition: .mustNotExist, isFolder: true)
            return try await entry(at: path)
        }
        let response = try await connection.send(connection.request("MKCOL", path: paths.requestPath(path, isFolder: true)))
        switch response.status.code {
        case 201: return try await entry(at: path)
        case 405: throw ProviderError(.filenameCollision, "\(path) already exists on the server")
        default: throw response.status.providerError("MKCOL", path)
        }
    }

    public func makeSymlink(at path: RemotePath, target: String,
                            condition: WriteCondition) async throws(ProviderError) -> RemoteEntry {
        let mode = try await writeGuard()
        // Servers have no symlinks: a small file holding the target, marked by a dead
        // property, written under a temporary name and moved into place so no client
        // sees it unmarked.
        let temporary = try path.parent.appending(Self.temporaryPrefix + UUID().uuidString)
        var put = connection.request("PUT", path: paths.requestPath(temporary), headers: [("If-None-Match", "*")])
        put.body = .bytes(ByteBuffer(string: target))
        let created = try await connection.send(put)
        guard (200..<300).contains(created.status.code) else { throw created.status.providerError("PUT", path) }
        do throws(ProviderError) {
            try await setSymlinkProperty(temporary, target: target)
            guard case .mustMatch(let version) = condition else { return try await move(temporary, to: path, version: nil) }
            if mode == .locks {
                try await place(temporary, at: path, condition: condition)
                return try await entry(at: path)
            }
            // Replace in one MOVE (Overwrite: T) so the link never disappears, after checking the version.
            let current = try await entry(at: path)
            guard current.etag?.sameValue(as: version) == true else {
                throw ProviderError(.versionMismatch, "\(path) changed on the server since version \(version)")
            }
            let request = connection.request("MOVE", path: paths.requestPath(temporary),
                                             headers: [("Destination", try destinationURL(path)), ("Overwrite", "T")])
            let moved = try await connection.send(request)
            guard (200..<300).contains(moved.status.code) else { throw moved.status.providerError("MOVE", path) }
            return try await entry(at: path)
        } catch {
            await removeTemporary(temporary, created: true)
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
        let statuses = String(decoding: response.body, as: UTF8.self).components(separatedBy: "HTTP/1.1 ").dropFirst()
        // lighttpd answers a PROPPATCH whose every property was set with 204 and no body.
        guard [200, 204, 207].contains(response.status.code), statuses.allSatisfy({ $0.hasPrefix("200") }) else {
            throw ProviderError(.cannotSynchronize, "the server cannot store symlinks (PROPPATCH refused)",
                                underlying: "HTTP \(response.status.code)")
        }
    }
}

extension WebDAVStore {
    /// The first byte of a `Content-Range: bytes START-END/TOTAL` header.
    static func contentRangeStart(_ header: String?) -> Int64? {
        guard let header, let spec = header.split(separator: " ").last,
              let dash = spec.firstIndex(of: "-") else { return nil }
        return Int64(spec[..<dash])
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
