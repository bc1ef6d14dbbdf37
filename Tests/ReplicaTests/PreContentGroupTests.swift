import Foundation
@testable import SystemCalls
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The fanotify pre-content primitives files on demand stands on, against the real kernel:
/// a sparse file marked before it is visible, read by another process, filled by the
/// handler through the event's descriptor, or denied with EIO — never read as zeros.
@Suite struct PreContentGroupTests {
    /// Why the kernel tests cannot run here, or nil when they can: a group needs root and
    /// Linux 6.14+, a mark a file system with pre-content events (ext4, xfs, btrfs).
    static let unavailable: String? = {
        guard getuid() == 0 else { return "needs root (CAP_SYS_ADMIN) for a fanotify pre-content group" }
        do throws(PreContentGroup.Failure) {
            let group = try PreContentGroup()
            let path = NSTemporaryDirectory() + "tidesync-fanotify-probe-\(UUID().uuidString)"
            let fd = open(path, O_CREAT | O_RDWR, 0o600)
            defer { close(fd); unlink(path) }
            try group.mark(fd, for: .preAccess)
            return nil
        } catch {
            return "\(error.description) (the temporary folder \(NSTemporaryDirectory()))"
        }
    }()

    static let size = 256 * 1024

    /// The byte at `offset` of the remote file in these tests.
    static func byte(at offset: Int) -> UInt8 { UInt8(truncatingIfNeeded: offset % 251) }

    /// A sparse placeholder of `size` bytes at `folder/name`: created under a temporary
    /// name, marked, then renamed in (a file opened before its mark would read zeros).
    static func placeholder(in folder: String, group: PreContentGroup) throws -> (path: String, device: UInt64, inode: UInt64) {
        let path = folder + "/f.bin"
        let fd = open(path + ".part", O_CREAT | O_RDWR | O_EXCL, 0o644)
        try #require(fd >= 0)
        defer { close(fd) }
        try #require(ftruncate(fd, off_t(size)) == 0)
        try group.mark(fd, for: .preAccess)
        var info = stat()
        try #require(fstat(fd, &info) == 0)
        try #require(rename(path + ".part", path) == 0)
        return (path, UInt64(info.st_dev), UInt64(info.st_ino))
    }

    /// Answers the group's events on its own thread until `stop`: events of the placeholder
    /// get `respond` (after filling their range when it is `.allow`); any other file is
    /// allowed untouched. Returns the ranges it filled.
    final class Handler: @unchecked Sendable {
        let group: PreContentGroup
        let device: UInt64, inode: UInt64
        let response: PreContentGroup.Response
        private let lock = NSLock()
        private var filled: [(UInt64, UInt64)] = []
        private var stopped = false
        private var thread: Thread?

        init(group: PreContentGroup, device: UInt64, inode: UInt64, response: PreContentGroup.Response) {
            self.group = group
            self.device = device
            self.inode = inode
            self.response = response
        }

        var ranges: [(UInt64, UInt64)] { lock.withLock { filled } }

        func start() {
            let thread = Thread { self.loop() }
            self.thread = thread
            thread.start()
        }

        func stop() { lock.withLock { stopped = true } }

        private func loop() {
            while !lock.withLock({ stopped }) {
                switch group.wait(milliseconds: 50) {
                case .timedOut: continue
                case .broken: return
                case .ready: for event in group.events() { handle(event) }
                }
            }
        }

        private func handle(_ event: PreContentGroup.Event) {
            var info = stat()
            guard fstat(event.file, &info) == 0, UInt64(info.st_dev) == device, UInt64(info.st_ino) == inode else {
                group.answer(event, with: .allow)  // not a placeholder: never written to
                return
            }
            if response == .allow, let range = event.range {
                let size = UInt64(info.st_size)
                let end = range.count == 0 ? size : min(size, range.offset + range.count)
                if range.offset < end {
                    let bytes = (Int(range.offset)..<Int(end)).map(PreContentGroupTests.byte(at:))
                    let written = bytes.withUnsafeBytes { pwrite(event.file, $0.baseAddress, $0.count, off_t(range.offset)) }
                    guard written == bytes.count, fsync(event.file) == 0 else {
                        group.answer(event, with: .deny(EIO))
                        return
                    }
                }
                lock.withLock { filled.append((range.offset, end)) }
            }
            group.answer(event, with: response)
        }
    }

    /// Runs `tool` with `arguments`; its exit status, standard output and error.
    static func run(_ tool: String, _ arguments: [String]) throws -> (Int32, Data, String) {
        let (status, data, errors) = try ChildProcess.collect(tool, arguments)
        return (status, data, String(decoding: errors, as: UTF8.self))
    }

    static func folder() throws -> String {
        let path = NSTemporaryDirectory() + "tidesync-fanotify-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Runs `body` with a placeholder in a new folder, marked in a new group whose handler
    /// answers its events with `response`; removes both afterwards.
    static func withPlaceholder(answering response: PreContentGroup.Response,
                                _ body: (PreContentGroup, (path: String, device: UInt64, inode: UInt64), Handler) throws -> Void) throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let group = try PreContentGroup()
        let file = try Self.placeholder(in: folder, group: group)
        let handler = Handler(group: group, device: file.device, inode: file.inode, response: response)
        handler.start()
        defer { handler.stop() }
        try body(group, file, handler)
    }

    @Test func eventsAreParsedAsTheKernelLaysThemOut() {
        func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value.littleEndian, Array.init) }
        // A FAN_PRE_ACCESS event with a range record, then a FAN_OPEN_PERM one without.
        var bytes = le(UInt32(48)) + [3, 0] + le(UInt16(24)) + le(UInt64(0x0010_0000)) + le(Int32(7)) + le(Int32(4242))
        bytes += [6, 0] + le(UInt16(24)) + le(UInt32(0)) + le(UInt64(8192)) + le(UInt64(4096))
        bytes += le(UInt32(24)) + [3, 0] + le(UInt16(24)) + le(UInt64(0x0001_0000)) + le(Int32(8)) + le(Int32(4243))
        let events = PreContentGroup.parse(bytes)
        #expect(events.count == 2)
        #expect(events.first?.file == 7 && events.first?.pid == 4242 && events.first?.events == .preAccess)
        #expect(events.first?.range?.offset == 8192 && events.first?.range?.count == 4096)
        #expect(events.last?.events == .openPermission && events.last?.range == nil)
        // Cut short, or of another metadata version: nothing is made up.
        #expect(PreContentGroup.parse(Array(bytes.prefix(40))).isEmpty)
        var other = bytes
        other[4] = 2
        #expect(PreContentGroup.parse(other).isEmpty)
    }

    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func aReadOfAPlaceholderWaitsForItsBytes() throws {
        try Self.withPlaceholder(answering: .allow) { group, file, handler in
            // Another process reads one page in the middle, then the whole file.
            let (middleStatus, middle, _) = try Self.run("/bin/dd", ["if=\(file.path)", "bs=4096", "skip=10", "count=1", "status=none"])
            #expect(middleStatus == 0)
            #expect(middle == Data((40960..<45056).map(Self.byte(at:))), "the page read was not the remote's bytes")
            #expect(handler.ranges.first.map { $0.0 <= 40960 && $0.1 >= 45056 } == true, "ranges: \(handler.ranges)")
            let (status, whole, _) = try Self.run("/bin/cat", [file.path])
            #expect(status == 0)
            #expect(whole == Data((0..<Self.size).map(Self.byte(at:))), "cat read zeros or other bytes")
        }
    }

    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func aFailedFetchIsAnErrorNeverZeros() throws {
        try Self.withPlaceholder(answering: .deny(EIO)) { group, file, handler in
            let (status, data, message) = try Self.run("/bin/cat", [file.path])
            #expect(status != 0)
            #expect(data.isEmpty, "cat got \(data.count) bytes of a file whose fetch failed")
            #expect(message.contains("Input/output error"), "cat said: \(message)")
                // An errno the kernel does not take would hang the reader: it is sent as EIO.
            #expect(PreContentGroup.Response.deny(ENOENT).value == PreContentGroup.Response.deny(EIO).value)
        }
    }

    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func aWholeFileLosesItsMarkAndRaisesNoMoreEvents() throws {
        try Self.withPlaceholder(answering: .allow) { group, file, handler in
            #expect(try Self.run("/bin/cat", [file.path]).0 == 0)
            let fd = open(file.path, O_RDONLY)
            try #require(fd >= 0)
            try group.unmark(fd, for: .preAccess)
            close(fd)
            let before = handler.ranges.count
            let (status, whole, _) = try Self.run("/bin/cat", [file.path])
            #expect(status == 0 && whole == Data((0..<Self.size).map(Self.byte(at:))))
            #expect(handler.ranges.count == before, "a read after the unmark still raised events")
        }
    }

    @Test("a group taken over answers the reads its dead holder left with EAGAIN, never zeros, and refuses other descriptors",
          .enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func aTakenOverGroupAnswersStaleReads() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let first = try PreContentGroup()
        let file = try Self.placeholder(in: folder, group: first)
        let out = folder + "/out"
        let reader = try ChildProcess("/bin/dd", ["if=\(file.path)", "of=\(out)", "bs=4096", "count=1", "status=none"],
                                      stderr: .file(folder + "/errors", keeping: false))
        defer { if reader.isRunning { kill(reader.processIdentifier, SIGKILL); reader.waitUntilExit() } }
        // The dead holder read the event and never answered: its descriptor is gone with it.
        var read: [PreContentGroup.Event] = []
        try await eventually("the reader's event") {
            if first.wait(milliseconds: 50) == .ready { read += first.events() }
            return !read.isEmpty
        }
        for event in read { close(event.file) }
        #expect(reader.isRunning, "the reader went on with its event unanswered")

        let taken = try PreContentGroup(inheriting: dup(first.descriptor))
        #expect(taken.answerStale(below: PreContentGroup.staleNumberLimit) == read.count)
        try await eventually("the reader's end", timeout: .seconds(20)) { !reader.isRunning }
        #expect(reader.terminationStatus != 0)
        #expect((readFile(folder + "/errors") ?? "").contains("Resource temporarily unavailable"), "\(readFile(folder + "/errors") ?? "")")
        #expect((try? Data(contentsOf: URL(fileURLWithPath: out)))?.isEmpty ?? true, "the reader got bytes of a placeholder")

        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        #expect(throws: PreContentGroup.Failure.self) { try PreContentGroup(inheriting: null) }
        close(null)
    }
}
