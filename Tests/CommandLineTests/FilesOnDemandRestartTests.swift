import Foundation
import SystemCalls
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Issue 15 item 4, the fd store: the daemon hands its fanotify group to the service
/// manager (`FDSTORE=1` over `$NOTIFY_SOCKET`), so after a kill -9 a reader of a placeholder
/// waits instead of reading zeros, and the daemon started again with the group passed back
/// (`LISTEN_FDS`) serves that reader the right bytes. The test plays systemd: it binds the
/// notify socket, keeps the group it receives and passes it as descriptor 3.
@Suite("files on demand: the fanotify group outlives a crash in the service manager's fd store",
       .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"),
       .enabled(if: FilesOnDemandProbe.unavailable == nil, "\(FilesOnDemandProbe.unavailable ?? "")"))
final class FilesOnDemandRestartTests {
    let fixture: DaemonFixture
    let apache: PrivateApache
    let disk: String
    let notify: NotifySocket

    init() async throws {
        (fixture, apache, disk) = try await DaemonFixture.onDemand(hydrationTimeout: "20s")
        notify = try NotifySocket(path: fixture.home + "/notify")
    }

    deinit { apache.stopAtEnd() }

    func putOnServer(_ name: String, _ data: Data) throws {
        try apache.put(data, at: name, disk: disk)
    }

    func holdsNoData(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        return fd >= 0 && lseek(fd, 0, 3) < 0 && errno == ENXIO  // SEEK_DATA
    }

    /// True while `pid` waits in the kernel for a fanotify answer (its wait channel, or,
    /// where the kernel hides symbols, the uninterruptible state such a wait shows as).
    static func waitsOnFanotify(_ pid: Int32) -> Bool {
        if (readFile("/proc/\(pid)/wchan") ?? "").contains("fanotify") { return true }
        let stat = readFile("/proc/\(pid)/stat") ?? ""
        return stat.split(separator: ")").last?.split(separator: " ").first == "D"
    }

    @Test("kill -9: a placeholder's reader waits on the stored group; the restarted daemon takes it back and serves the right bytes")
    func aReaderWaitsForTheRestart() async throws {
        let big = fixture.local + "/big.bin"
        try putOnServer("big.bin", FilesOnDemandTests.content(1))
        try fixture.startDaemon(extraEnvironment: ["NOTIFY_SOCKET": notify.path])
        #expect(try await fixture.waitUntilIdle(seconds: 60), "never idle; log:\n\(fixture.log.suffix(3000))")
        try #require(holdsNoData(big), "big.bin is not a dataless placeholder")
        let stored = try #require(try await notify.descriptor(named: "fanotify-st"),
                                  "no FDSTORE=1 with FDNAME=fanotify-st came; messages: \(notify.messages)")
        defer { close(stored) }

        fixture.signal(SIGKILL)
        if let daemon = fixture.daemon { await waitForExit(daemon) }
        let out = fixture.home + "/out"
        let reader = try ChildProcess("/bin/dd", ["if=\(big)", "of=\(out)", "bs=4096", "skip=100", "count=2", "status=none"])
        defer { if reader.isRunning { kill(reader.processIdentifier, SIGKILL); reader.waitUntilExit() } }
        try await eventually("the reader waiting on the group", timeout: .seconds(20)) {
            Self.waitsOnFanotify(reader.processIdentifier) || !reader.isRunning
        }
        #expect(reader.isRunning, "the reader of a placeholder went on with no daemon (zeros)")
        #expect((try? Data(contentsOf: URL(fileURLWithPath: out)))?.isEmpty ?? true)

        // systemd's way: LISTEN_PID is the daemon's own pid, the group is its descriptor 3.
        let daemon = try ChildProcess("/bin/sh", ["-c", "LISTEN_PID=$$ exec \"$0\" run", Binary.path!],
                                      environment: fixture.environment.merging(["NOTIFY_SOCKET": notify.path, "LISTEN_FDS": "1",
                                                                                "LISTEN_FDNAMES": "fanotify-st"]) { $1 },
                                      stderr: .appending(fixture.daemonLog), passing: [stored])
        fixture.daemon = daemon
        try await eventually("the reader's end", timeout: .seconds(60)) { !reader.isRunning }
        #expect(reader.terminationStatus == 0)
        let expected = FilesOnDemandTests.content(1)[409_600..<417_792]
        let data = (try? Data(contentsOf: URL(fileURLWithPath: out))) ?? Data()
        #expect(FilesOnDemandTests.difference(data, Data(expected)) == nil, "log:\n\(fixture.log.suffix(3000))")
        #expect(fixture.log.contains("reusing the fanotify group"), "log:\n\(fixture.log.suffix(3000))")

        // A clean stop takes the group out of the store: no stale group is handed back.
        #expect(await fixture.stopDaemon() == 0)
        #expect(notify.messages.contains { $0.contains("FDSTOREREMOVE=1") && $0.contains("FDNAME=fanotify-st") },
                "messages: \(notify.messages)")
    }
}

/// A unix datagram socket in the role of systemd's notify socket: keeps the messages and
/// the descriptors they carry. Read at once, on a thread of its own, as systemd reads its
/// socket: a test that looks only now and then would fill the queue (10 datagrams), and a
/// daemon's later messages (its stop's FDSTOREREMOVE) would be given up after its send timeout.
final class NotifySocket: @unchecked Sendable {
    let path: String
    let fd: Int32
    /// What the reading thread received, and whether it is to stop.
    private final class Inbox: @unchecked Sendable {
        let lock = NSLock()
        var received: [(message: String, fds: [Int32])] = []
        var stopped = false
    }
    private let inbox = Inbox()
    private let reader: Thread

    /// Every message received so far.
    var messages: [String] { inbox.lock.withLock { inbox.received.map { $0.message } } }

    init(path: String) throws {
        self.path = path
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        try #require(fd >= 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0, "cannot bind \(path): \(String(cString: strerror(errno)))")
        self.fd = fd
        let inbox = inbox
        reader = Thread {
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while !inbox.lock.withLock({ inbox.stopped }) {
                guard poll(&ready, 1, 100) > 0 else { continue }
                while let entry = NotifySocket.receive(fd) { inbox.lock.withLock { inbox.received.append(entry) } }
            }
        }
        reader.start()
    }

    deinit {
        // The thread sees the flag within its 100 ms poll; the socket is closed after it.
        inbox.lock.withLock { inbox.stopped = true }
        while !reader.isFinished { usleep(10_000) }
        for entry in inbox.received { entry.fds.forEach { close($0) } }
        close(fd)
        unlink(path)
    }

    /// Waits for a `FDSTORE=1` message naming `name` and returns its descriptor (moved to
    /// 100 or above, so it can be passed as 3); nil when none came within a minute.
    func descriptor(named name: String) async throws -> Int32? {
        var found: Int32?
        _ = try await waitUntil(timeout: .seconds(60)) {
            found = inbox.lock.withLock {
                inbox.received.first(where: { $0.message.split(separator: "\n").contains("FDSTORE=1")
                    && $0.message.split(separator: "\n").contains("FDNAME=\(name)") && $0.fds.count == 1 })
                    .map { fcntl($0.fds[0], F_DUPFD_CLOEXEC, 100) }
            }
            return found != nil
        }
        return found
    }

    private static func receive(_ fd: Int32) -> (message: String, fds: [Int32])? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var control = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBytes { bytes in
            control.withUnsafeMutableBytes { controlBytes in
                var vector = iovec(iov_base: bytes.baseAddress, iov_len: bytes.count)
                return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                    var header = msghdr(msg_name: nil, msg_namelen: 0, msg_iov: vectorPointer, msg_iovlen: 1,
                                        msg_control: controlBytes.baseAddress, msg_controllen: controlBytes.count, msg_flags: 0)
                    let count = recvmsg(fd, &header, Int32(MSG_CMSG_CLOEXEC))
                    return (count, header.msg_controllen)
                }
            }
        }
        guard count.0 >= 0 else { return nil }
        return (String(decoding: buffer[0..<count.0], as: UTF8.self), Self.rights(control, length: count.1))
    }

    /// The descriptors of an SCM_RIGHTS control message (one cmsghdr of 16 bytes, then ints).
    static func rights(_ control: [UInt8], length: Int) -> [Int32] {
        guard length >= 16 else { return [] }
        return control.withUnsafeBytes { raw in
            let total = raw.load(fromByteOffset: 0, as: Int.self)
            guard raw.load(fromByteOffset: 8, as: Int32.self) == SOL_SOCKET,
                  raw.load(fromByteOffset: 12, as: Int32.self) == Int32(SCM_RIGHTS), total >= 16, total <= length else { return [] }
            return (0..<(total - 16) / 4).map { raw.load(fromByteOffset: 16 + $0 * 4, as: Int32.self) }
        }
    }
}
