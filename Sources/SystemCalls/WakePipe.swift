import Glibc

/// A pipe that wakes a thread waiting in `poll` on `readEnd`: `signal` writes a byte, which
/// stays (the pipe is never read), so every later wait returns at once too. For loops that
/// wait on a descriptor without a timeout and must still notice that they are to stop.
public final class WakePipe: Sendable {
    public let readEnd: Int32
    private let writeEnd: Int32

    /// Nil when no pipe can be made (out of descriptors).
    public init?() {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }  // pipe2 is not in Swift's Glibc module
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
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
