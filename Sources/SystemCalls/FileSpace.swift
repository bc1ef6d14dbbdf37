import Glibc

/// `fallocate(2)`, whose mode flags Swift's Glibc module does not declare, looked up once:
/// punching a range's blocks out (eviction) and allocating them ahead of its bytes (a
/// hydration), the file's size kept either way.
public enum FileSpace {
    private typealias Function = @convention(c) (Int32, Int32, Int64, Int64) -> Int32
    private static let function: Function? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "fallocate64") ?? dlsym(UnsafeMutableRawPointer(bitPattern: 0), "fallocate")
        else { return nil }
        return unsafeBitCast(symbol, to: Function.self)
    }()

    /// `FALLOC_FL_KEEP_SIZE`.
    static let keepSize: Int32 = 0x01
    /// `FALLOC_FL_PUNCH_HOLE`.
    static let punchHole: Int32 = 0x02

    /// Punches `[offset, offset + length)` of the file open (for writing) as `fd`: frees its
    /// data blocks (the range then reads as zeros, or raises pre-content events where
    /// marked). -1 with errno set when it cannot (EOPNOTSUPP: the file system does not punch).
    public static func punch(_ fd: Int32, offset: Int64, length: Int64) -> Int32 {
        call(fd, keepSize | punchHole, offset, length)
    }

    /// Allocates the blocks of `[offset, offset + length)` of the file open (for writing) as
    /// `fd` as unwritten extents, which read as holes until written (SEEK_HOLE included):
    /// the writes that follow then skip the file system's block reservation page by page
    /// (ext4's delayed allocation: 1 GiB written in 0.155 s instead of 0.224 s on this
    /// machine), and a full disk shows before any byte is fetched. -1 with errno set when it
    /// cannot (ENOSPC, EDQUOT; EOPNOTSUPP where the file system has no such allocation).
    public static func allocate(_ fd: Int32, offset: Int64, length: Int64) -> Int32 {
        call(fd, keepSize, offset, length)
    }

    private static func call(_ fd: Int32, _ mode: Int32, _ offset: Int64, _ length: Int64) -> Int32 {
        guard let function else {
            errno = ENOSYS
            return -1
        }
        return function(fd, mode, offset, length)
    }
}
