import Glibc

/// What `statx(2)` says of a file: `lstat`'s fields tidesync uses, plus the birth time,
/// which `lstat` does not give. Swift's Glibc module does not declare `statx`; it is looked
/// up once, and where the C library lacks it `lstat`/`fstat` answer with no birth time.
public struct StatX: Sendable, Equatable {
    /// `st_mode`: the type bits (`S_IFMT`) and the permissions.
    public var mode: UInt32
    public var inode: UInt64
    public var size: Int64
    /// Nanoseconds since 1970.
    public var modificationNanoseconds: Int64
    /// When this inode was made, in nanoseconds since 1970; 0 where the file system keeps
    /// no birth time (or the call could not say). A freed inode number handed to a new
    /// file comes with a new birth time, and nothing a program can call (`utimensat`,
    /// `rename`, `cp -p`) sets it: inode and birth time together name one file.
    public var birthNanoseconds: Int64

    /// `statx` of `name` in the folder open as `directory` (not following a final
    /// symlink), or nil with `errno` set: the kernel looks up one name, not a whole path.
    /// With `AT_FDCWD`, `name` is a path (`lstat`).
    public static func of(_ name: String, in directory: Int32) -> StatX? {
        call(directory, name, flags: AT_SYMLINK_NOFOLLOW) {
            var st = stat()
            return fstatat(directory, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? StatX(st) : nil
        }
    }

    /// `statx` of the file open as `descriptor`, or nil with `errno` set.
    public static func of(descriptor: Int32) -> StatX? {
        call(descriptor, "", flags: emptyPath) {
            var st = stat()
            return fstat(descriptor, &st) == 0 ? StatX(st) : nil
        }
    }

    init(_ st: stat) {
        mode = st.st_mode
        inode = UInt64(st.st_ino)
        size = Int64(st.st_size)
        modificationNanoseconds = Self.nanoseconds(Int64(st.st_mtim.tv_sec), Int64(st.st_mtim.tv_nsec))
        birthNanoseconds = 0
    }

    // The kernel's `struct statx` (include/uapi/linux/stat.h): 256 bytes, fixed offsets.
    private static let bufferSize = 256
    private static let basicStats: UInt32 = 0x7ff  // STATX_BASIC_STATS
    private static let birthTime: UInt32 = 0x800  // STATX_BTIME
    private static let emptyPath: Int32 = 0x1000  // AT_EMPTY_PATH
    private typealias Function = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UInt32, UnsafeMutableRawPointer) -> Int32
    private static let function: Function? = Symbol.lookUp("statx")

    private static func call(_ directory: Int32, _ path: String, flags: Int32, fallback: () -> StatX?) -> StatX? {
        guard let function else { return fallback() }
        return withUnsafeTemporaryAllocation(byteCount: bufferSize, alignment: 8) { bytes -> StatX? in
            let buffer = bytes.baseAddress!
            buffer.initializeMemory(as: UInt8.self, repeating: 0, count: bufferSize)
            guard function(directory, path, flags, basicStats | birthTime, buffer) == 0 else {
                return errno == ENOSYS ? fallback() : nil
            }
            return decode(buffer)
        }
    }

    /// `seconds` and `nanoseconds` as nanoseconds since 1970, clamped to what an Int64 holds.
    public static func nanoseconds(_ seconds: Int64, _ nanoseconds: Int64) -> Int64 {
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, over) = scaled.addingReportingOverflow(nanoseconds)
        return over ? .max : sum
    }

    private static func decode(_ buffer: UnsafeMutableRawPointer) -> StatX {
        // Nanoseconds since 1970 hold 1677 to 2262; a file dated outside (`touch -d 2300-01-01`,
        // a server's year-1 date put on a download) is clamped there, not a crash.
        func time(at offset: Int) -> Int64 {
            nanoseconds(buffer.load(fromByteOffset: offset, as: Int64.self), Int64(buffer.load(fromByteOffset: offset + 8, as: UInt32.self)))
        }
        let mask = buffer.load(fromByteOffset: 0, as: UInt32.self)
        return StatX(mode: UInt32(buffer.load(fromByteOffset: 28, as: UInt16.self)),
                     inode: buffer.load(fromByteOffset: 32, as: UInt64.self),
                     size: Int64(bitPattern: buffer.load(fromByteOffset: 40, as: UInt64.self)),
                     modificationNanoseconds: time(at: 112),
                     birthNanoseconds: mask & birthTime != 0 ? time(at: 80) : 0)
    }

    init(mode: UInt32, inode: UInt64, size: Int64, modificationNanoseconds: Int64, birthNanoseconds: Int64) {
        self.mode = mode
        self.inode = inode
        self.size = size
        self.modificationNanoseconds = modificationNanoseconds
        self.birthNanoseconds = birthNanoseconds
    }
}

/// C library functions Swift's Glibc module does not declare, looked up by name.
enum Symbol {
    static func lookUp<T>(_ name: String) -> T? {
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), name).map { unsafeBitCast($0, to: T.self) }
    }
}
