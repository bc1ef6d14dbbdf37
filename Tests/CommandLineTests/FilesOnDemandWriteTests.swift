import Foundation
import SystemCalls
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Writes into a placeholder (issue 15 item 6) and what `status` says of placeholders (item
/// 7), through the real binary and a private Apache: a program that writes into a
/// placeholder finds it whole (its base version fetched) before its write goes on, the edit
/// is uploaded whole; when that version is gone from the server the write is refused before
/// it changes anything, and the server's version comes down under the name.
@Suite("files on demand: writes into placeholders, and status",
       .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"),
       .enabled(if: FilesOnDemandProbe.unavailable == nil, "\(FilesOnDemandProbe.unavailable ?? "")"))
final class FilesOnDemandWriteTests {
    let fixture: DaemonFixture
    let apache: PrivateApache
    let disk: String
    static let size = FilesOnDemandTests.size

    /// A poll of an hour: the server's changes are seen only when a test asks (`sync-now`).
    init() async throws {
        (fixture, apache, disk) = try await DaemonFixture.onDemand(hydrationTimeout: "30s", poll: "1h")
    }

    deinit { apache.stopAtEnd() }

    func putOnServer(_ name: String, _ data: Data) throws {
        try apache.put(data, at: name, disk: disk)
    }

    func local(_ name: String) -> String { fixture.local + "/" + name }
    func contents(_ path: String) -> Data { (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data() }

    func state(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        return fd >= 0 ? ExtendedAttributes.get("user.tidesync.state", of: fd) : nil
    }

    func holdsNoData(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        return fd >= 0 && lseek(fd, 0, 3) < 0 && errno == ENXIO  // SEEK_DATA
    }

    /// `sh -c command` with a minute's limit (a program left waiting would hang the test).
    func shell(_ command: String) async throws -> Binary.Result {
        try await Binary.run("/usr/bin/timeout", ["60", "/bin/sh", "-c", command], environment: ["PATH": "/usr/bin:/bin"])
    }

    func startWithPlaceholders(_ names: [String]) async throws {
        try fixture.startDaemon()
        #expect(try await fixture.waitUntilIdle(seconds: 60), "never idle; log:\n\(fixture.log.suffix(3000))")
        for name in names { try #require(holdsNoData(local(name)), "\(name) is not a dataless placeholder") }
    }

    @Test("echo >> placeholder: the whole old content is there before the append, and the file is uploaded whole")
    func anAppendFindsTheWholeFile() async throws {
        let old = FilesOnDemandTests.content(1)
        try putOnServer("big.bin", old)
        try await startWithPlaceholders(["big.bin"])
        let appended = try await shell("echo tail >> '\(local("big.bin"))'")
        #expect(appended.status == 0, "\(appended.errors)")
        // Whole as the write returns: not a partial file with the program's bytes in it.
        #expect(state(local("big.bin")) == "materialized", "state after the append: \(state(local("big.bin")) ?? "none")")
        let expected = old + Data("tail\n".utf8)
        #expect(FilesOnDemandTests.difference(contents(local("big.bin")), expected) == nil, "the local file")
        try await eventually("the appended file on the server", timeout: .seconds(60)) { contents(disk + "/big.bin") == expected }
        #expect(await fixture.stopDaemon() == 0)
    }

    @Test("a write at an offset into a dataless placeholder keeps the rest of the file right, here and on the server")
    func aWriteAtAnOffsetKeepsTheRest() async throws {
        let old = FilesOnDemandTests.content(2)
        try putOnServer("big.bin", old)
        try await startWithPlaceholders(["big.bin"])
        let offset = 1_500_000
        let written = try await shell("printf EDIT | dd of='\(local("big.bin"))' bs=1 seek=\(offset) conv=notrunc status=none")
        #expect(written.status == 0, "\(written.errors)")
        #expect(state(local("big.bin")) == "materialized", "state after the write: \(state(local("big.bin")) ?? "none")")
        var expected = old
        expected.replaceSubrange(offset..<offset + 4, with: Data("EDIT".utf8))
        #expect(FilesOnDemandTests.difference(contents(local("big.bin")), expected) == nil, "the local file")
        try await eventually("the edited file on the server", timeout: .seconds(60)) { contents(disk + "/big.bin") == expected }
        #expect(await fixture.stopDaemon() == 0)
    }

    /// The placeholder's version was replaced on the server before the write (the daemon
    /// has not polled yet). Its missing bytes exist nowhere any more, so no file can hold the
    /// old version with the program's bytes: the write is refused (EIO) before it changes a
    /// byte, the program keeps its bytes and says so, the server's version is left as it is
    /// and comes down under the name, and the same write then lands on it.
    @Test("a write into a placeholder whose version is gone from the server is refused unchanged; nothing is lost")
    func aWriteAgainstAVersionGoneLosesNothing() async throws {
        let first = FilesOnDemandTests.content(3), second = FilesOnDemandTests.content(4)
        try putOnServer("big.bin", first)
        try await startWithPlaceholders(["big.bin"])
        // One page read: the bytes the append's page needs are on disk already.
        let page = try await shell("dd if='\(local("big.bin"))' bs=4096 count=1 status=none > /dev/null")
        #expect(page.status == 0, "\(page.errors)")
        try await eventually("the page recorded", timeout: .seconds(30)) { state(local("big.bin")) == "partial" }
        try putOnServer("big.bin", second)

        let refused = try await shell("echo tail >> '\(local("big.bin"))'")
        #expect(refused.status != 0 && refused.errors.contains("Input/output error"), "\(refused.status) \(refused.errors)")
        #expect(contents(disk + "/big.bin") == second, "the server's version was changed")
        var info = stat()
        #expect(lstat(local("big.bin"), &info) == 0 && Int(info.st_size) == Self.size, "the refused write changed the file")

        #expect(try await fixture.tidesync(["sync-now"]).status == 0)
        try await eventually("the server's version under the name", timeout: .seconds(60)) {
            contents(local("big.bin")) == second
        }
        let again = try await shell("echo tail >> '\(local("big.bin"))'")
        #expect(again.status == 0, "\(again.errors)")
        let expected = second + Data("tail\n".utf8)
        try await eventually("the append on the server's version", timeout: .seconds(60)) { contents(disk + "/big.bin") == expected }
        #expect(fixture.log.contains("changed on the server since its placeholder was made"), "the log does not say why")
        #expect(await fixture.stopDaemon() == 0)
    }

    @Test("status counts dataless and partial placeholders with their bytes on disk, and shows a hydration in flight with its pid")
    func statusShowsPlaceholdersAndHydrationsInFlight() async throws {
        let small = Data("small and whole\n".utf8)
        try putOnServer("a.bin", FilesOnDemandTests.content(5))
        try putOnServer("b.bin", FilesOnDemandTests.content(6))
        try putOnServer("small.txt", small)
        try await startWithPlaceholders(["a.bin", "b.bin"])
        let page = try await shell("dd if='\(local("a.bin"))' bs=4096 skip=20 count=1 status=none > /dev/null")
        #expect(page.status == 0, "\(page.errors)")
        // The reader goes on once its bytes are written; they are recorded once fsynced.
        try await eventually("the page recorded", timeout: .seconds(30)) {
            let placeholders = DaemonFixture.firstDomain(try await fixture.statusJSON().json)["placeholders"] as? [String: Any]
            return placeholders?["partial"] as? Int == 1
        }

        let schema = try SchemaValidator(schemaFile: DaemonFixture.repository + "/packaging/schema/status.schema.json")
        let document = try await fixture.statusJSON().json
        #expect(schema.problems(document).isEmpty, "\(schema.problems(document))")
        let domain = DaemonFixture.firstDomain(document)
        let placeholders = domain["placeholders"] as? [String: Any] ?? [:]
        #expect(placeholders["dataless"] as? Int == 1 && placeholders["partial"] as? Int == 1, "placeholders: \(placeholders)")
        let counts = domain["counts"] as? [String: Any] ?? [:]
        #expect(counts["bytesOnDisk"] as? Int == small.count + 65_536 && counts["bytesTotal"] as? Int == 2 * Self.size + small.count,
                "counts: \(counts)")
        let screen = try await fixture.tidesync(["status"]).output
        #expect(screen.contains("placeholders: 1 dataless, 1 partial"), "status said:\n\(screen)")

        // The server holds its answers: a reader of b.bin waits, and status names it.
        let out = fixture.home + "/b.page"
        let reader: ChildProcess
        var inFlight: [[String: Any]] = []
        do {
            let stopped = apache.pause()
            defer { apache.resume(stopped) }
            reader = try ChildProcess("/bin/dd", ["if=\(local("b.bin"))", "of=\(out)", "bs=4096", "skip=100", "count=1", "status=none"])
            var waiting: [String: Any] = [:]
            #expect(try await waitUntil(timeout: .seconds(20)) {
                waiting = try await fixture.statusJSON().json
                inFlight = DaemonFixture.firstDomain(waiting)["hydrationsInFlight"] as? [[String: Any]] ?? []
                return !inFlight.isEmpty
            }, "no hydration in flight in status")
            #expect(schema.problems(waiting).isEmpty, "\(schema.problems(waiting))")
            let text = try await fixture.tidesync(["status"]).output
            #expect(text.contains("hydrating now:") && text.contains("dd (pid \(reader.processIdentifier)) reads b.bin"),
                    "status said:\n\(text)")
        }
        #expect(inFlight.first?["pid"] as? Int == Int(reader.processIdentifier) && inFlight.first?["program"] as? String == "dd"
                && inFlight.first?["path"] as? String == "b.bin", "\(inFlight)")
        await waitForExit(reader)
        #expect(reader.terminationStatus == 0)
        #expect(contents(out) == FilesOnDemandTests.content(6)[409_600..<413_696], "the reader's page")
        let after = DaemonFixture.firstDomain(try await fixture.statusJSON().json)
        #expect(after["hydrationsInFlight"] == nil, "still in flight: \(after["hydrationsInFlight"] ?? "")")
        #expect(await fixture.stopDaemon() == 0)
    }
}

extension PrivateApache {
    /// Stops every process of this Apache (SIGSTOP): it takes connections but answers
    /// nothing until `resume`. Returns the pids stopped.
    func pause() -> [pid_t] {
        guard let text = try? String(contentsOfFile: directory + "/httpd.pid", encoding: .utf8),
              let main = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { return [] }
        let children = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap(pid_t.init).filter { pid in
            // /proc/PID/stat: "PID (NAME) STATE PPID …"; the name may hold spaces, so look after its ")".
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return false }
            return stat[stat.index(after: close)...].split(separator: " ").dropFirst().first == "\(main)"
        }
        let all = [main] + children
        for pid in all { kill(pid, SIGSTOP) }
        return all
    }

    func resume(_ pids: [pid_t]) {
        for pid in pids { kill(pid, SIGCONT) }
    }
}
