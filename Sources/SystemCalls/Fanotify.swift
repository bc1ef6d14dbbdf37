// fanotify(7) pre-content events (Linux 6.14+): the group files on demand hydrates
// placeholders through. Swift's Glibc module declares neither call, and Debian 12's headers
// predate FAN_PRE_ACCESS, so the calls are looked up with dlsym and the constants are the
// kernel's uapi values (include/uapi/linux/fanotify.h; early drafts used 0x00080000 for
// FAN_PRE_ACCESS, the merged value is 0x00100000).
import Glibc
import Synchronization

/// A fanotify group of class `FAN_CLASS_PRE_CONTENT`, with inode marks only: a read of a
/// marked file blocks until the group answers its event. Needs global CAP_SYS_ADMIN.
public final class PreContentGroup: @unchecked Sendable {
    /// The group's descriptor; events are read from it and answered through it.
    public let descriptor: Int32
    /// False once `close` ran: marks and answers are then refused, never written to a
    /// descriptor number the kernel may have given to another file.
    private let isOpen = Mutex(true)

    /// The events a mark asks for.
    public struct Events: OptionSet, Sendable {
        public let rawValue: UInt64
        public init(rawValue: UInt64) { self.rawValue = rawValue }
        /// Before bytes of the file are read (or written, or mapped): with the range.
        public static let preAccess = Events(rawValue: 0x0010_0000)
        /// When the file is opened (for hole-skipping tools that never read a hole).
        public static let openPermission = Events(rawValue: 0x0001_0000)
    }

    /// The answer to an event.
    public enum Response: Sendable, Equatable {
        case allow
        /// Deny with an errno; the kernel takes only EPERM, EIO, EAGAIN, EBUSY, ETXTBSY,
        /// ENOSPC and EDQUOT (any other would leave the reader hanging), so others become EIO.
        case deny(Int32)

        var value: UInt32 {
            switch self {
            case .allow: return 0x01
            case .deny(let code):
                let allowed: Set<Int32> = [EPERM, EIO, EAGAIN, EBUSY, ETXTBSY, ENOSPC, EDQUOT]
                return 0x02 | (UInt32(allowed.contains(code) ? code : EIO) & 0xff) << 24
            }
        }
    }

    /// One permission event: the reader waits until it is answered.
    public struct Event: Sendable, Equatable {
        /// A descriptor of the file (opened without notification: the handler's own reads
        /// and writes through it raise no event); the group closes it when answering.
        public var file: Int32
        /// The process that accesses the file.
        public var pid: Int32
        public var events: Events
        /// The bytes to be accessed, page aligned: `count` 0 means "from `offset` to the
        /// end" (a clone, a truncate). Nil when the kernel gave no range (an open).
        public var range: (offset: UInt64, count: UInt64)?

        public init(file: Int32, pid: Int32, events: Events, range: (offset: UInt64, count: UInt64)?) {
            self.file = file
            self.pid = pid
            self.events = events
            self.range = range
        }

        public static func == (lhs: Event, rhs: Event) -> Bool {
            lhs.file == rhs.file && lhs.pid == rhs.pid && lhs.events == rhs.events
                && lhs.range?.offset == rhs.range?.offset && lhs.range?.count == rhs.range?.count
        }
    }

    /// Why a group or a mark could not be made.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let errno: Int32
        public let description: String

        /// A failure with `errno` and a sentence saying what it means.
        public init(errno: Int32, description: String) {
            self.errno = errno
            self.description = description
        }
    }

    private typealias InitFunction = @convention(c) (UInt32, UInt32) -> Int32
    private typealias MarkFunction = @convention(c) (Int32, UInt32, UInt64, Int32, UnsafePointer<CChar>?) -> Int32
    private static let initFunction: InitFunction? = symbol("fanotify_init")
    /// `/dev/null`, read-only: put in an event's place before it is answered.
    private static let nothing = open("/dev/null", O_RDONLY | O_CLOEXEC)
    private static let markFunction: MarkFunction? = symbol("fanotify_mark")

    private static func symbol<T>(_ name: String) -> T? {
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), name).map { unsafeBitCast($0, to: T.self) }
    }

    /// A new group, with an unlimited queue (a full queue would let reads through as zeros)
    /// and unlimited marks; event descriptors are opened read-write for the handler's writes.
    public init() throws(Failure) {
        let classPreContent: UInt32 = 0x08, cloexec: UInt32 = 0x01, unlimitedQueue: UInt32 = 0x10, unlimitedMarks: UInt32 = 0x20
        guard let initFunction = Self.initFunction else { throw Failure(errno: ENOSYS, description: "this C library has no fanotify_init") }
        let fd = initFunction(classPreContent | cloexec | unlimitedQueue | unlimitedMarks, UInt32(O_RDWR))  // 64-bit: O_LARGEFILE is implied
        guard fd >= 0 else {
            let code = errno
            switch code {
            case EPERM: throw Failure(errno: code, description: "fanotify pre-content events need CAP_SYS_ADMIN (run as root)")
            case EINVAL: throw Failure(errno: code, description: "this kernel has no fanotify pre-content events (Linux 6.14 or later)")
            default: throw Failure(errno: code, description: "fanotify_init failed: \(String(cString: strerror(code)))")
            }
        }
        descriptor = fd
    }

    /// The group in `descriptor`, checked by the caller (`init(inheriting:)`).
    init(adopting descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit { close() }

    /// Closes the group: its marks go with it and the kernel lets every event still
    /// unanswered through (facts §0.2). Stop reading events first.
    public func close() {
        isOpen.withLock { open in
            guard open else { return }
            open = false
            Glibc.close(descriptor)
        }
    }

    /// Marks the file open as `file` (an inode mark: every path to it, and nothing else).
    public func mark(_ file: Int32, for events: Events) throws(Failure) {
        try changeMark(file, flags: 0x01, events: events)
    }

    /// Removes the marks of the file open as `file` (a whole file needs no more events).
    public func unmark(_ file: Int32, for events: Events) throws(Failure) {
        try changeMark(file, flags: 0x02, events: events)
    }

    private func changeMark(_ file: Int32, flags: UInt32, events: Events) throws(Failure) {
        guard let markFunction = Self.markFunction else { throw Failure(errno: ENOSYS, description: "this C library has no fanotify_mark") }
        let result = isOpen.withLock { open -> Int32? in
            guard open else { return nil }
            return markFunction(descriptor, flags, events.rawValue, file, nil) == 0 ? 0 : errno
        }
        // A closed group holds no marks: removing one is done, adding one is refused.
        guard let code = result else {
            if flags == 0x02 { return }
            throw Failure(errno: EBADF, description: "the fanotify group is closed (tidesync is stopping)")
        }
        guard code == 0 else {
            throw Failure(errno: code, description: code == EINVAL
                          ? "this file system does not offer pre-content events (ext4, xfs and btrfs do)"
                          : "fanotify_mark failed: \(String(cString: strerror(code)))")
        }
    }

    /// What `wait(milliseconds:)` found.
    public enum Readiness: Sendable, Equatable {
        case ready
        /// Nothing within the time (or a signal came first).
        case timedOut
        /// The descriptor can no longer be polled: an event loop must end, not spin.
        case broken
    }

    /// Waits for events to read, or until `wake` is signalled, with no timeout: an idle loop
    /// costs no wake-up. `.timedOut` when `wake` woke it (or a signal came).
    public func wait(wakingOn wake: WakePipe) -> Readiness {
        var fds = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.readEnd, events: Int16(POLLIN), revents: 0)]
        let result = poll(&fds, 2, -1)
        if result < 0 { return errno == EINTR ? .timedOut : .broken }
        if fds[0].revents & Int16(POLLIN) != 0 { return .ready }
        if fds[0].revents != 0 { return .broken }
        return .timedOut
    }

    /// Waits up to `milliseconds` for events to read.
    public func wait(milliseconds: Int32) -> Readiness {
        var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let result = poll(&ready, 1, milliseconds)
        if result < 0 { return errno == EINTR ? .timedOut : .broken }
        if result == 0 { return .timedOut }
        return ready.revents & Int16(POLLIN) != 0 ? .ready : .broken
    }

    /// Reads the events waiting (blocking until one comes); empty when the group was closed
    /// or interrupted.
    public func events() -> [Event] {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return [] }
        return Self.parse(Array(buffer[0..<count]))
    }

    /// The events in `bytes`, as the kernel lays them out: a 24-byte metadata record, then
    /// information records walked by their own lengths.
    public static func parse(_ bytes: [UInt8]) -> [Event] {
        var events: [Event] = []
        var start = 0
        while start + 24 <= bytes.count {
            let length = Int(load(UInt32.self, bytes, start))
            let metadataLength = Int(load(UInt16.self, bytes, start + 6))
            guard length >= 24, metadataLength >= 24, start + length <= bytes.count, bytes[start + 4] == 3 else { break }
            var event = Event(file: load(Int32.self, bytes, start + 16), pid: load(Int32.self, bytes, start + 20),
                              events: Events(rawValue: load(UInt64.self, bytes, start + 8)), range: nil)
            var info = start + metadataLength
            while info + 4 <= start + length {
                let type = bytes[info], infoLength = Int(load(UInt16.self, bytes, info + 2))
                guard infoLength >= 4, info + infoLength <= start + length else { break }
                if type == 6, infoLength >= 24 {
                    event.range = (load(UInt64.self, bytes, info + 8), load(UInt64.self, bytes, info + 16))
                }
                info += infoLength
            }
            events.append(event)
            start += length
        }
        return events
    }

    private static func load<T: FixedWidthInteger>(_ type: T.Type, _ bytes: [UInt8], _ offset: Int) -> T {
        bytes.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
    }

    /// Answers `event` (the waiting reader goes on, or gets the errno) and closes its file.
    /// Once the group is closed there is nothing to answer (the kernel let the event through).
    @discardableResult
    public func answer(_ event: Event, with response: Response) -> Bool {
        defer { Glibc.close(event.file) }
        // Let go of the read-write file before the waiting process goes on: an opener that
        // next takes a read lease (the daemon's own writer check) would find it open for
        // writing. The number stays taken until the answer is written, so it names no other
        // event's file meanwhile (the kernel matches answers by number).
        if Self.nothing >= 0, dup2(Self.nothing, event.file) == event.file { _ = fcntl(event.file, F_SETFD, FD_CLOEXEC) }
        return isOpen.withLock { open in open ? respond(to: event.file, response) : true }
    }

    /// Writes the answer for the event with descriptor number `file` when the group is
    /// open, once (no fallback: the kernel refuses a number no read event has, ENOENT); false
    /// when it is closed or refused.
    func respondIfOpen(to file: Int32, _ response: Response) -> Bool {
        isOpen.withLock { open in
            guard open else { return false }
            var record: (Int32, UInt32) = (file, response.value)
            return withUnsafeBytes(of: &record) { write(descriptor, $0.baseAddress, 8) } == 8
        }
    }

    /// Writes the answer for the event with descriptor number `file` (the group is open).
    private func respond(to file: Int32, _ response: Response) -> Bool {
        var record: (Int32, UInt32) = (file, response.value)
        var written = withUnsafeBytes(of: &record) { write(descriptor, $0.baseAddress, 8) }
        if written != 8 {
            // An answer the kernel refused would leave the reader waiting forever: a plain deny.
            record.1 = 0x02
            written = withUnsafeBytes(of: &record) { write(descriptor, $0.baseAddress, 8) }
        }
        return written == 8
    }
}
