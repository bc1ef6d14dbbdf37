import Glibc
import SyncEngine

/// What `lstat` says about a path, in the terms the store needs.
struct FileStatus: Equatable {
    var kind: ItemKind
    var size: Int64
    var inode: UInt64
    var device: UInt64
    var modificationSeconds: Int64
    var modificationNanoseconds: Int64

    /// The content version: size, mtime in ns and inode together, so any content
    /// change (rename-over, in-place write, truncate) gives a new version.
    var etag: ETag {
        ETag(value: "\(String(size, radix: 16))-\(String(modificationSeconds, radix: 16)).\(String(modificationNanoseconds, radix: 16))-\(String(inode, radix: 16))")
    }

    init(_ st: stat) {
        switch st.st_mode & S_IFMT {
        case S_IFDIR: kind = .folder
        case S_IFLNK: kind = .symlink
        default: kind = .file
        }
        size = kind == .folder ? 0 : Int64(st.st_size)
        inode = UInt64(st.st_ino)
        device = UInt64(st.st_dev)
        modificationSeconds = Int64(st.st_mtim.tv_sec)
        modificationNanoseconds = Int64(st.st_mtim.tv_nsec)
    }

    /// `lstat` of `path`; nil when nothing is there, throws for any other failure.
    static func of(_ path: String) throws(ProviderError) -> FileStatus? {
        var st = stat()
        if lstat(path, &st) == 0 { return FileStatus(st) }
        if errno == ENOENT || errno == ENOTDIR { return nil }
        throw SystemError.providerError(errno, "cannot read the status of \(path)")
    }

    /// `fstat` of an open descriptor.
    static func of(descriptor fd: Int32, path: String) throws(ProviderError) -> FileStatus {
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            throw SystemError.providerError(errno, "cannot read the status of \(path)")
        }
        return FileStatus(st)
    }
}

/// Maps errno values to the engine's error codes at the store's boundary.
enum SystemError {
    /// An error writing a download's destination, which lies on the local disk (the sync
    /// folder's), not on the store's: a full disk there parks the domain as `localDiskFull`.
    static func destinationError(_ code: Int32, _ what: String) -> ProviderError {
        guard code == ENOSPC || code == EDQUOT else { return providerError(code, what) }
        return ProviderError(.localDiskFull, "the local disk is full; free some space (\(what))",
                             underlying: String(cString: strerror(code)))
    }

    static func providerError(_ code: Int32, _ what: String) -> ProviderError {
        let text = String(cString: strerror(code))
        switch code {
        case ENOENT: return ProviderError(.noSuchItem, what, underlying: text)
        case EEXIST, ENOTEMPTY: return ProviderError(.filenameCollision, what, underlying: text)
        case ENOSPC, EDQUOT: return ProviderError(.insufficientQuota, "\(what): the store's disk is full", underlying: text)
        case EACCES, EPERM, EROFS:
            return ProviderError(.cannotSynchronize, "\(what): permission denied; check the store folder's owner and mode", underlying: text)
        case EIO, ENODEV, ENXIO, ESTALE:
            return ProviderError(.serverUnreachable, "\(what): the store's disk is failing or gone", underlying: text)
        case ENAMETOOLONG: return ProviderError(.cannotSynchronize, "\(what): the name is too long", underlying: text)
        default: return ProviderError(.cannotSynchronize, what, underlying: text)
        }
    }
}
