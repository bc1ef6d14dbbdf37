// The cache's system calls: folders, whole writes and bounded reads.
import Glibc

extension ThumbnailCache {
    /// Makes `path` and its missing parents, each 0700; existing ones are left as they are,
    /// and one that is no folder is refused.
    public static func makeFolders(_ path: String) throws(ThumbnailError) {
        var partial = ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            partial += "/" + component
            if mkdir(partial, 0o700) != 0 && errno != EEXIST { throw failure("make folder \(partial)") }
            var info = stat()
            if stat(partial, &info) != 0 || info.st_mode & S_IFMT != S_IFDIR { throw .cache("\(partial) is not a folder") }
        }
    }

    /// Writes every byte of `bytes` to `descriptor`.
    static func writeAll(_ bytes: [UInt8], to descriptor: Int32, path: String) throws(ThumbnailError) {
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw failure("write \(path)") }
            written += count
        }
    }

    /// The file at `path` when it is a regular file of at most `maximumReadSize` bytes.
    static func read(_ path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG,
              status.st_size <= maximumReadSize else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size)), total = 0
        while total < bytes.count {
            let count = bytes[total...].withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            total += count
        }
        return Array(bytes.prefix(total))
    }

    /// A `.cache` error naming what failed and the system's reason (from errno).
    static func failure(_ action: String) -> ThumbnailError {
        .cache("cannot \(action): \(String(cString: strerror(errno)))")
    }
}
