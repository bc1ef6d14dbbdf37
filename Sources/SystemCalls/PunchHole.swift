import Glibc

/// `fallocate(2)` with `FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`, which Swift's Glibc
/// module does not declare, looked up once: frees the data blocks of a range, the file's
/// size kept (the range then reads as zeros, or raises pre-content events where marked).
public enum PunchHole {
    private typealias Function = @convention(c) (Int32, Int32, Int64, Int64) -> Int32
    private static let function: Function? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "fallocate64") ?? dlsym(UnsafeMutableRawPointer(bitPattern: 0), "fallocate")
        else { return nil }
        return unsafeBitCast(symbol, to: Function.self)
    }()

    /// `FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE`.
    static let mode: Int32 = 0x01 | 0x02

    /// Punches `[offset, offset + length)` of the file open (for writing) as `fd`; -1 with
    /// errno set when it cannot (EOPNOTSUPP: the file system does not punch holes).
    public static func punch(_ fd: Int32, offset: Int64, length: Int64) -> Int32 {
        guard let function else {
            errno = ENOSYS
            return -1
        }
        return function(fd, mode, offset, length)
    }
}
