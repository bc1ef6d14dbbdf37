// Resumed downloads. A part is fsynced every `syncStep` bytes, at exact multiples of it,
// and nothing past a multiple is written before the fsync of that multiple returned. So a
// part of size S (S > 0) after a crash or a power cut holds durable, correct bytes up to
// the last multiple below S, `(S - 1) / syncStep * syncStep`: that much is kept, the rest
// is asked for with `Range: bytes=N-` and `If-Range: "etag"`. The answer is checked: a 200
// (the server has another version, or ignores ranges) starts over from byte 0, a 206 must
// cover exactly `N-` to the end, or the download fails and nothing is spliced. Weak tags
// cannot go in If-Range (Apache's first-second tag): those downloads start over.
import Glibc
import AsyncHTTPClient
import Foundation
import NIOCore
import SyncEngine
import SystemCalls

extension WebDAVStore {
    /// A part is fsynced at every multiple of this many bytes.
    static let syncStep: Int64 = 4 << 20

    public func download(_ path: RemotePath, version: ETag?, resumingInto destination: URL,
                         progress: TransferProgress?) async throws(ProviderError) -> ETag? {
        guard let version, !version.isWeak else {
            return try await download(path, range: nil, version: version, to: destination, progress: progress)
        }
        let kept = Self.durableLength(of: destination.path)
        var headers: [(String, String)] = []
        if kept > 0 { headers = [("Range", "bytes=\(kept)-"), ("If-Range", version.strongHeaderValue)] }
        let request = connection.request("GET", path: paths.requestPath(path), headers: headers)
        let meter = TransferMeter()
        return try await connection.stream(request, meter: meter) { response in
            try await self.receivePart(response, of: path, asked: kept, version: version, to: destination,
                                       meter: meter, progress: progress)
        }
    }

    /// The bytes of the part at `path` that were fsynced for sure (see above); 0 without one.
    static func durableLength(of path: String) -> Int64 {
        var st = stat()
        guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_size > 0 else { return 0 }
        return (Int64(st.st_size) - 1) / syncStep * syncStep
    }

    /// Checks the answer to a (ranged) GET and writes it into the part: from `asked` on a
    /// 206 that starts there, from 0 on a 200.
    func receivePart(_ response: HTTPClientResponse, of path: RemotePath, asked: Int64, version: ETag, to destination: URL,
                     meter: TransferMeter, progress: TransferProgress?) async throws(ProviderError) -> ETag? {
        let etag = servedVersion(response.headers, status: response.status.code)
        guard [200, 206].contains(response.status.code) else { throw response.status.providerError("GET", path) }
        try await check(response, of: path, isVersion: version, etag: etag, whole: true)
        var start: Int64 = 0
        var total = response.headers.first(name: "Content-Length").flatMap { Int64($0) }
        if response.status.code == 206 {
            let range = Self.contentRange(response.headers.first(name: "Content-Range"))
            guard asked > 0, let range, range.start == asked, range.end + 1 == range.total else {
                throw ProviderError(.cannotSynchronize, "the server answered a range request for \(path) with other bytes",
                                    underlying: "Content-Range \(response.headers.first(name: "Content-Range") ?? "missing"), asked for bytes \(asked)-")
            }
            (start, total) = (asked, range.total)
        }
        let fd = open(destination.path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ChunkWriter.localError(errno, "cannot create \(destination.path)") }
        defer { close(fd) }
        guard ftruncate(fd, off_t(start)) == 0 else { throw ChunkWriter.localError(errno, "cannot write \(destination.path)") }
        var writer = ChunkWriter(descriptor: fd, skip: 0, limit: nil, written: start)
        do {
            for try await chunk in response.body {
                meter.add(chunk.readableBytes)
                try Self.write(chunk, with: &writer, syncing: destination)
                progress?(writer.written, total)
            }
        } catch {
            throw WebDAVConnection.map(error, method: "GET")
        }
        if let total, writer.written != total {
            throw ProviderError(.serverUnreachable, "the download of \(path) ended early (\(writer.written) of \(total) bytes); will resume")
        }
        TransferSlot.release()
        let failure = TransferSlot.callerSyncs ? 0 : await OffPool.fsync(fd)
        guard failure == 0 else { throw ChunkWriter.localError(failure, "cannot write \(destination.path)") }
        return etag ?? version
    }

    /// Writes `chunk` in pieces that end at multiples of `syncStep`, fsyncing at each.
    static func write(_ chunk: ByteBuffer, with writer: inout ChunkWriter, syncing destination: URL) throws(ProviderError) {
        var rest = chunk
        while rest.readableBytes > 0 {
            let room = syncStep - writer.written % syncStep
            let piece = rest.readSlice(length: Int(min(Int64(rest.readableBytes), room)))!
            try writer.write(piece)
            if writer.written % syncStep == 0, fsync(writer.descriptor) != 0 {
                throw ChunkWriter.localError(errno, "cannot write \(destination.path)")
            }
        }
    }

    /// `Content-Range: bytes START-END/TOTAL`, parsed; nil when it is not that.
    static func contentRange(_ header: String?) -> (start: Int64, end: Int64, total: Int64)? {
        guard let header, header.hasPrefix("bytes "), let slash = header.firstIndex(of: "/") else { return nil }
        let span = header[header.index(header.startIndex, offsetBy: 6)..<slash].split(separator: "-")
        guard span.count == 2, let start = Int64(span[0]), let end = Int64(span[1]),
              let total = Int64(header[header.index(after: slash)...]), start <= end, end < total else { return nil }
        return (start, end, total)
    }
}
