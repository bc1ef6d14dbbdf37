import Glibc

/// glibc's `malloc_trim(3)`, which Swift's Glibc module does not declare, looked up once.
public enum MemoryTrim {
    private typealias TrimFunction = @convention(c) (Int) -> Int32
    private static let trimFunction: TrimFunction? = Symbol.lookUp("malloc_trim")

    /// Gives the pages of freed memory back to the kernel (every arena, not only the main
    /// heap's top); does nothing where the C library has no `malloc_trim`.
    public static func releaseFreedMemory() {
        _ = trimFunction?(0)
    }
}
