import Glibc

/// `renameat2(2)`, which Swift's Glibc module does not declare, looked up once.
public enum RenameAt2 {
    private typealias Function = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32
    private static let function: Function? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "renameat2") else { return nil }
        return unsafeBitCast(symbol, to: Function.self)
    }()

    public static let noReplace: UInt32 = 1
    public static let exchange: UInt32 = 2

    /// Renames with `flags`; -1 with errno ENOSYS when the call is not there.
    public static func rename(_ source: String, _ target: String, flags: UInt32) -> Int32 {
        guard let function else {
            errno = ENOSYS
            return -1
        }
        return function(AT_FDCWD, source, AT_FDCWD, target, flags)
    }
}
