import Glibc
import NIOCore
import SyncEngine

/// A file opened for reading, closed when the last reference goes away — so an
/// HTTP client still draining a request body after an early answer never reads a
/// closed (or reused) descriptor.
final class OpenFile: Sendable {
    let descriptor: Int32
    let path: String

    init(reading path: String) throws(ProviderError) {
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        self.path = path
        guard descriptor >= 0 else {
            throw ProviderError(.cannotSynchronize, "cannot open \(path) for upload", underlying: String(cString: strerror(errno)))
        }
    }

    deinit { close(descriptor) }

    /// Size and modification time, to tell whether the file changed while it was read.
    struct Status: Equatable { var size: Int64; var seconds: Int; var nanoseconds: Int; var inode: UInt64 }

    func status() throws(ProviderError) -> Status {
        var st = stat()
        guard fstat(descriptor, &st) == 0 else {
            throw ProviderError(.cannotSynchronize, "cannot read \(path)", underlying: String(cString: strerror(errno)))
        }
        return Status(size: Int64(st.st_size), seconds: st.st_mtim.tv_sec, nanoseconds: st.st_mtim.tv_nsec, inode: UInt64(st.st_ino))
    }
}

/// Reads a file in fixed-size chunks as `ByteBuffer`s, so an upload streams from disk
/// with back-pressure and never holds the file in memory.
///
/// With `unchanged`, the file's status is checked once the last chunk is read and before
/// it is handed over: a file written meanwhile fails the body, so the request is cut short
/// and the server (whose PUT is atomic) keeps what it had. Bytes that pass the check were
/// all read while the file held one version.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let file: OpenFile
    let length: Int64
    let chunkSize: Int
    let progress: TransferProgress?
    var unchanged: OpenFile.Status? = nil
    /// Counts the bytes handed to the HTTP client, for the low-speed watchdog.
    var meter: TransferMeter? = nil

    struct AsyncIterator: AsyncIteratorProtocol {
        let chunks: FileChunks
        var offset: Int64 = 0
        let allocator = ByteBufferAllocator()

        mutating func next() async throws -> ByteBuffer? {
            guard offset < chunks.length else { return nil }
            let want = Int(Swift.min(Int64(chunks.chunkSize), chunks.length - offset))
            var buffer = allocator.buffer(capacity: want)
            let start = offset
            let got = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { raw in
                var n: Int
                repeat { n = pread(chunks.file.descriptor, raw.baseAddress, want, off_t(start)) } while n < 0 && errno == EINTR
                return Swift.max(n, 0)
            }
            guard got > 0 else {
                throw ProviderError(.cannotSynchronize, "the file being uploaded became shorter; it will be sent again")
            }
            offset += Int64(got)
            if offset >= chunks.length, let unchanged = chunks.unchanged, try chunks.file.status() != unchanged {
                throw ProviderError(.cannotSynchronize, "\(chunks.file.path) changed while it was uploaded; it will be sent again")
            }
            chunks.progress?(offset, chunks.length)
            chunks.meter?.add(got)
            return buffer
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(chunks: self) }
}

/// Writes response body chunks to a file descriptor, skipping `skip` bytes first and
/// stopping after `limit` bytes (a server that ignores `Range` sends the whole file).
struct ChunkWriter {
    let descriptor: Int32
    /// Where in the file the first byte kept goes.
    let base: Int64
    var skip: Int64
    var limit: Int64?
    var written: Int64 = 0

    init(descriptor: Int32, base: Int64 = 0, skip: Int64, limit: Int64?, written: Int64 = 0) {
        self.descriptor = descriptor
        self.base = base
        self.skip = skip
        self.limit = limit
        self.written = written
    }

    mutating func write(_ buffer: ByteBuffer) throws(ProviderError) {
        var slice = buffer
        if skip > 0 {
            let dropped = Int(min(Int64(slice.readableBytes), skip))
            slice.moveReaderIndex(forwardBy: dropped)
            skip -= Int64(dropped)
        }
        if let limit { slice = slice.getSlice(at: slice.readerIndex, length: Int(min(Int64(slice.readableBytes), max(0, limit - written))))! }
        let count = slice.readableBytes
        guard count > 0 else { return }
        let fd = descriptor
        let offset = base + written
        let failure: Int32? = slice.withUnsafeReadableBytes { raw -> Int32? in
            var done = 0
            while done < raw.count {
                let n = pwrite(fd, raw.baseAddress! + done, raw.count - done, off_t(offset + Int64(done)))
                if n < 0 { if errno == EINTR { continue }; return errno }
                done += n
            }
            return nil
        }
        if let failure { throw Self.localError(failure, "cannot write the downloaded data") }
        written += Int64(count)
    }

    var isComplete: Bool { limit.map { written >= $0 } ?? false }

    /// An error writing a download's file on the local disk: a full disk (ENOSPC, EDQUOT,
    /// from write, fsync or creating the file) parks the domain as `localDiskFull`.
    static func localError(_ code: Int32, _ what: String) -> ProviderError {
        let text = String(cString: strerror(code))
        if code == ENOSPC || code == EDQUOT {
            return ProviderError(.localDiskFull, "the local disk is full; free some space (\(what))", underlying: text)
        }
        return ProviderError(.cannotSynchronize, what, underlying: text)
    }
}
