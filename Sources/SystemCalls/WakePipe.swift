import Glibc

/// A pipe that wakes a thread waiting in `poll` on `readEnd`: `signal` writes a byte, which
/// stays (the pipe is never read), so every later wait returns at once too. For loops that
/// wait on a descriptor without a timeout and must still notice that they are to stop.
public final class WakePipe: Sendable {
    public let readEnd: Int32
    private let writeEnd: Int32

    private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
    // In glibc since 2.9 (tidesync needs 2.34), but not in Swift's Glibc module.
    private static let pipe2: Pipe2? = Symbol.lookUp("pipe2")

    /// Nil when no pipe can be made (out of descriptors).
    public init?() {
        var ends: [Int32] = [-1, -1]
        // Close-on-exec from the start: a child spawned by another thread in between
        // would otherwise keep the pipe.
        guard let pipe2 = Self.pipe2, pipe2(&ends, O_CLOEXEC | O_NONBLOCK) == 0 else { return nil }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    /// Wakes every waiter, now and later.
    public func signal() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }
}
