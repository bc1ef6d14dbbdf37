import Glibc

/// `fsetxattr(2)`, `fgetxattr(2)` and `fremovexattr(2)` on an open descriptor (and
/// `setxattr(2)` on a path), which Swift's Glibc module does not declare, looked up once.
/// Writing one raises IN_ATTRIB, never IN_MODIFY, and leaves the file's mtime alone.
public enum ExtendedAttributes {
    private typealias SetFunction = @convention(c) (Int32, UnsafePointer<CChar>, UnsafeRawPointer?, Int, Int32) -> Int32
    private typealias GetFunction = @convention(c) (Int32, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int) -> Int
    private static let setFunction: SetFunction? = symbol("fsetxattr")
    private static let getFunction: GetFunction? = symbol("fgetxattr")
    private typealias PathSetFunction = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeRawPointer?, Int, Int32) -> Int32
    private typealias RemoveFunction = @convention(c) (Int32, UnsafePointer<CChar>) -> Int32
    private static let pathSetFunction: PathSetFunction? = symbol("setxattr")
    private static let removeFunction: RemoveFunction? = symbol("fremovexattr")

    private static func symbol<T>(_ name: String) -> T? { Symbol.lookUp(name) }

    /// Sets `name` to `value` on the file open as `file`; 0, or -1 with errno.
    public static func set(_ name: String, _ value: String, on file: Int32) -> Int32 {
        guard let setFunction else {
            errno = ENOSYS
            return -1
        }
        let bytes = Array(value.utf8)
        return bytes.withUnsafeBytes { setFunction(file, name, $0.baseAddress, $0.count, 0) }
    }

    /// The value of `name` on the file open as `file`, or nil when it has none.
    public static func get(_ name: String, of file: Int32) -> String? {
        guard let getFunction else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { getFunction(file, name, $0.baseAddress, $0.count) }
        guard count >= 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    /// Sets `name` to `value` on the file at `path` (symlinks followed: `/proc/self/fd/N`
    /// reaches the file of an `O_PATH` descriptor, which `fsetxattr` refuses); 0, or -1 with errno.
    public static func set(_ name: String, _ value: String, atPath path: String) -> Int32 {
        guard let pathSetFunction else {
            errno = ENOSYS
            return -1
        }
        let bytes = Array(value.utf8)
        return bytes.withUnsafeBytes { pathSetFunction(path, name, $0.baseAddress, $0.count, 0) }
    }

    /// Removes `name` from the file open as `file`; 0, or -1 with errno (ENODATA: it had none).
    @discardableResult
    public static func remove(_ name: String, of file: Int32) -> Int32 {
        guard let removeFunction else {
            errno = ENOSYS
            return -1
        }
        return removeFunction(file, name)
    }
}
