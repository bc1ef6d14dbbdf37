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
        // "size-seconds.nanoseconds-inode" in lowercase hex, written into one buffer (a listing
        // makes one per entry; four `String(_:radix:)` and an interpolation cost more than the lstat).
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        func hex(_ value: UInt64) {
            let digits = Swift.max(1, (64 - value.leadingZeroBitCount + 3) / 4)
            for shift in stride(from: (digits - 1) * 4, through: 0, by: -4) {
                let digit = UInt8((value >> UInt64(shift)) & 0xF)
                bytes.append(digit < 10 ? 0x30 + digit : 0x57 + digit)
            }
        }
        func signed(_ value: Int64) {  // as `String(_:radix:)` writes it: a minus, then the magnitude
            if value < 0 { bytes.append(0x2D) }
            hex(value.magnitude)
        }
        signed(size)
        bytes.append(0x2D)
        signed(modificationSeconds)
        bytes.append(0x2E)
        signed(modificationNanoseconds)
        bytes.append(0x2D)
        hex(inode)
        return ETag(value: String(decoding: bytes, as: UTF8.self))
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

    /// `lstat` of `name` in the open folder `folder` (`fstatat`: no walk of the path from
    /// the root for each entry of a listing); nil when nothing is there. `path` is for errors.
    static func of(_ name: String, in folder: Int32, path: @autoclosure () -> String) throws(ProviderError) -> FileStatus? {
        var st = stat()
        if fstatat(folder, name, &st, AT_SYMLINK_NOFOLLOW) == 0 { return FileStatus(st) }
        if errno == ENOENT || errno == ENOTDIR { return nil }
        throw SystemError.providerError(errno, "cannot read the status of \(path())")
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
