import Foundation
import SystemCalls
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Never a silent zero, and who may hydrate (issue 15 items 4 and 5), through the real
/// binary and a private Apache: copies made by hole-skipping tools hold the right bytes, a
/// cleanly stopped daemon leaves its placeholders unreadable (EACCES) until it runs again,
/// and an indexer gets EPERM for bytes a placeholder lacks, fetching nothing.
@Suite("files on demand: no silent zeros, and who may hydrate",
       .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"),
       .enabled(if: FilesOnDemandProbe.unavailable == nil, "\(FilesOnDemandProbe.unavailable ?? "")"))
final class FilesOnDemandSafetyTests {
    let fixture: DaemonFixture
    let apache: PrivateApache
    let disk: String

    init() async throws {
        (fixture, apache, disk) = try await DaemonFixture.onDemand(hydrationTimeout: "20s")
    }

    deinit { apache.stopAtEnd() }

    var accessLog: String { apache.directory + "/access.log" }
    var getCount: Int { (readFile(accessLog) ?? "").split(separator: "\n").filter { $0.contains("\"GET ") }.count }

    func putOnServer(_ name: String, _ data: Data) throws {
        try apache.put(data, at: name, disk: disk)
    }

    func local(_ name: String) -> String { fixture.local + "/" + name }

    func holdsNoData(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        return fd >= 0 && lseek(fd, 0, 3) < 0 && errno == ENXIO  // SEEK_DATA
    }

    func contents(_ path: String) -> Data { (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data() }

    /// `sh -c command` with a minute's limit (a reader left waiting would hang the test).
    func shell(_ command: String) async throws -> Binary.Result {
        try await Binary.run("/usr/bin/timeout", ["60", "/bin/sh", "-c", command], environment: ["PATH": "/usr/bin:/bin"])
    }

    /// `dd` of `count` 4 KiB blocks from block `skip` of `path`, as `nobody` when `unprivileged`.
    func read(_ path: String, skip: Int, count: Int, unprivileged: Bool = false,
              program: String = "/bin/dd") async throws -> (status: Int32, data: Data, message: String) {
        let out = temporaryPath("tidesync-fod-out-")
        defer { unlink(out) }
        let user = unprivileged ? "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups " : ""
        let result = try await shell("\(user)\(program) if='\(path)' bs=4096 skip=\(skip) count=\(count) status=none > '\(out)'")
        return (result.status, contents(out), result.errors)
    }

    func mode(_ path: String) -> mode_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : 0o10000
    }

    func savedMode(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        return fd >= 0 ? ExtendedAttributes.get("user.tidesync.mode", of: fd) : nil
    }

    func startAndWaitForPlaceholders(_ names: [String]) async throws {
        try fixture.startDaemon()
        #expect(try await fixture.waitUntilIdle(seconds: 60), "never idle; log:\n\(fixture.log.suffix(3000))")
        for name in names { try #require(holdsNoData(local(name)), "\(name) is not a dataless placeholder") }
    }

    @Test("cp, tar --sparse and rsync copy a placeholder's right bytes: its open by them hydrates it whole")
    func holeSkippingCopiesHoldTheRightBytes() async throws {
        let files = ["a.bin": FilesOnDemandTests.content(1), "b.bin": FilesOnDemandTests.content(2), "c.bin": FilesOnDemandTests.content(3)]
        for (name, data) in files { try putOnServer(name, data) }
        try await startAndWaitForPlaceholders(Array(files.keys))
        let out = fixture.home + "/out"
        try FileManager.default.createDirectory(atPath: out + "/x", withIntermediateDirectories: true)

        let cp = try await shell("cp '\(local("a.bin"))' '\(out)/a.bin'")
        #expect(cp.status == 0, "\(cp.errors)")
        #expect(FilesOnDemandTests.difference(contents(out + "/a.bin"), files["a.bin"]!) == nil, "cp's copy")
        let tar = try await shell("tar --sparse -cf '\(out)/b.tar' -C '\(fixture.local)' b.bin && tar -xf '\(out)/b.tar' -C '\(out)/x'")
        #expect(tar.status == 0, "\(tar.errors)")
        #expect(FilesOnDemandTests.difference(contents(out + "/x/b.bin"), files["b.bin"]!) == nil, "tar --sparse's copy")
        let rsync = try await shell("rsync '\(local("c.bin"))' '\(out)/c.bin'")
        #expect(rsync.status == 0, "\(rsync.errors)")
        #expect(FilesOnDemandTests.difference(contents(out + "/c.bin"), files["c.bin"]!) == nil, "rsync's copy")
        #expect(await fixture.stopDaemon() == 0)
    }

    @Test("after a clean stop a placeholder is mode 000 (EACCES for a user, its mode in an xattr); a restart reads it right")
    func aStoppedDaemonLeavesPlaceholdersUnreadable() async throws {
        let big = local("big.bin"), small = local("small.txt")
        try putOnServer("big.bin", FilesOnDemandTests.content(1))
        try putOnServer("small.txt", Data("small and whole\n".utf8))
        try await startAndWaitForPlaceholders(["big.bin"])
        // The whole file is the control: readable by a user before and after the stop.
        try #require(chmod(small, 0o644) == 0)
        // A user reads one page while the daemon runs: the folder is open to them.
        let running = try await read(big, skip: 10, count: 1, unprivileged: true)
        #expect(running.status == 0 && running.data == FilesOnDemandTests.content(1)[40_960..<45_056], "\(running.message)")

        #expect(await fixture.stopDaemon() == 0)
        #expect(mode(big) == 0, "the stopped daemon's placeholder has mode \(String(mode(big), radix: 8))")
        #expect(savedMode(big) == "644")
        #expect(mode(small) == 0o644, "a whole file's mode was changed")
        #expect(savedMode(small) == nil)
        let refused = try await read(big, skip: 100, count: 1, unprivileged: true)
        #expect(refused.status != 0 && refused.message.contains("Permission denied"), "\(refused.status) \(refused.message)")
        #expect(refused.data.isEmpty, "a user read \(refused.data.count) bytes of a placeholder while the daemon was stopped")
        let whole = try await read(small, skip: 0, count: 1, unprivileged: true)
        #expect(whole.status == 0 && whole.data == Data("small and whole\n".utf8), "\(whole.message)")

        try fixture.startDaemon()
        #expect(try await fixture.waitUntilIdle(seconds: 60), "never idle after a restart; log:\n\(fixture.log.suffix(3000))")
        #expect(mode(big) == 0o644 && savedMode(big) == nil, "mode \(String(mode(big), radix: 8)), xattr \(savedMode(big) ?? "none")")
        let back = try await read(big, skip: 300, count: 2, unprivileged: true)
        #expect(back.status == 0, "\(back.message)")
        #expect(FilesOnDemandTests.difference(back.data, FilesOnDemandTests.content(1)[1_228_800..<1_236_992]) == nil)

        // kill -9: the modes stay as they were (only a clean stop locks).
        fixture.signal(SIGKILL)
        if let daemon = fixture.daemon { await waitForExit(daemon) }
        #expect(mode(big) == 0o644 && savedMode(big) == nil)
    }

    @Test("an indexer in deny_hydration gets EPERM for a placeholder's missing bytes and fetches nothing; status shows who hydrated")
    func anIndexerFetchesNothing() async throws {
        try putOnServer("big.bin", FilesOnDemandTests.content(1))
        try await startAndWaitForPlaceholders(["big.bin"])
        // `dd` under tracker-extract-3's process name (the kernel keeps 15 bytes of it).
        let indexer = fixture.home + "/tracker-extract"
        try FileManager.default.copyItem(atPath: "/bin/dd", toPath: indexer)
        let gets = getCount
        let refused = try await read(local("big.bin"), skip: 20, count: 4, program: indexer)
        #expect(refused.status != 0 && refused.message.contains("Operation not permitted"), "\(refused.status) \(refused.message)")
        #expect(refused.data.isEmpty)
        #expect(getCount == gets, "the indexer's read was fetched")
        #expect(holdsNoData(local("big.bin")))
        #expect(fixture.log.contains("tracker-extract"), "the log does not say who was refused")

        let read = try await read(local("big.bin"), skip: 20, count: 4)
        #expect(read.status == 0 && read.data == FilesOnDemandTests.content(1)[81_920..<98_304], "\(read.message)")

        // status names who pulled what: dd, one 64 KiB aligned range of big.bin; not the indexer.
        let status = DaemonFixture.firstDomain(try await fixture.statusJSON().json)
        let hydrations = status["recentHydrations"] as? [[String: Any]] ?? []
        #expect(hydrations.count == 1, "\(hydrations)")
        #expect(hydrations.last?["program"] as? String == "dd" && hydrations.last?["path"] as? String == "big.bin"
                && hydrations.last?["bytes"] as? Int == 65_536 && (hydrations.last?["pid"] as? Int ?? 0) > 0, "\(hydrations)")
        let screen = try await fixture.tidesync(["status"]).output
        #expect(screen.contains("last hydrations:") && screen.contains("dd (pid "), "status said:\n\(screen)")
        #expect(await fixture.stopDaemon() == 0)
    }
}
