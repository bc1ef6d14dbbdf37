import Foundation
@testable import StateDatabase
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Issue 15 items 7 and 8 through the real binary, real fanotify on /tmp's ext4 and a
/// private Apache: `file-status`, `hydrate --range`, `evict`, `pin`, `unpin`, their
/// refusals, and what a remote change does to a placeholder, pinned or not.
@Suite("file commands against the real binary",
       .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"),
       .enabled(if: FilesOnDemandProbe.unavailable == nil, "\(FilesOnDemandProbe.unavailable ?? "")"))
final class FileCommandsTests {
    static let size = FilesOnDemandTests.size
    static func content(_ version: Int) -> Data { FilesOnDemandTests.content(version) }

    let fixture: DaemonFixture
    let apache: PrivateApache
    let disk: String

    init() async throws {
        (fixture, apache, disk) = try await DaemonFixture.onDemand()
    }

    deinit { apache.stopAtEnd() }

    func local(_ name: String) -> String { fixture.local + "/" + name }

    func putOnServer(_ data: Data, at name: String) throws {
        try apache.put(data, at: name, disk: disk)
    }

    func makeRemoteFolder(_ name: String) throws {
        try FileManager.default.createDirectory(atPath: disk + "/" + name, withIntermediateDirectories: true)
        if let owner = apache.values["TIDESYNC_TEST_DAV_OWNER"] {
            try FileManager.default.setAttributes([.ownerAccountName: owner, .groupOwnerAccountName: owner], ofItemAtPath: disk + "/" + name)
        }
    }

    /// `tidesync file-status --json PATH`'s one report.
    func report(_ name: String) async throws -> [String: Any] {
        let result = try await fixture.tidesync(["file-status", "--json", local(name)])
        let json = (try? JSONSerialization.jsonObject(with: Data(result.output.utf8))) as? [String: Any]
        return (json?["files"] as? [[String: Any]])?.first ?? ["exit": result.status, "errors": result.errors]
    }

    func materialization(_ name: String) throws -> String {
        try column("materialization", of: name)
    }

    func column(_ column: String, of name: String) throws -> String {
        try StateDatabase.query("SELECT \(column) FROM item WHERE name = '\(name)'",
                                onFileAt: fixture.home + "/.state/tidesync/st.sqlite").map { $0.map { $0 ?? "" }.joined() }.joined()
    }

    func stat(_ name: String) -> Glibc.stat {
        var info = Glibc.stat()
        _ = lstat(local(name), &info)
        return info
    }

    func holdsNoData(_ name: String) -> Bool {
        let fd = open(local(name), O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        return fd >= 0 && lseek(fd, 0, 3) < 0 && errno == ENXIO  // SEEK_DATA
    }

    /// The whole file as `cat` reads it (through the hydration a reader gets).
    func read(_ name: String) async throws -> Data {
        let copy = fixture.home + "/read-copy"
        let result = try await Binary.run("/usr/bin/timeout", ["60", "/bin/sh", "-c", "/bin/cat '\(local(name))' > '\(copy)'"],
                                          environment: nil)
        #expect(result.status == 0, "cat: \(result.errors)")
        return try Data(contentsOf: URL(fileURLWithPath: copy))
    }

    func startAndWait() async throws {
        try fixture.startDaemon(arguments: ["--log-level", "debug"])
        #expect(try await fixture.waitUntilIdle(seconds: 60), "never idle; log:\n\(fixture.log.suffix(3000))")
    }

    @Test("file-status, hydrate --range, evict then read, pin and unpin, with their refusals")
    func commandsOnAPlaceholder() async throws {
        try putOnServer(Self.content(1), at: "big.bin")
        try await startAndWait()
        let dataless = try await report("big.bin")
        #expect(dataless["state"] as? String == "dataless" && dataless["present"] as? Int == 0, "\(dataless)")
        #expect(dataless["pinned"] as? Bool == false && dataless["pending"] as? Bool == false && dataless["conflict"] as? Bool == false)

        // 8 KiB at 1 MiB: one 64 KiB unit comes down; the text form says partial 3 %.
        let ranged = try await fixture.tidesync(["hydrate", "--range", "1MiB:8KiB", local("big.bin")])
        #expect(ranged.status == 0 && ranged.output.contains("Hydrated"), "\(ranged.output)\(ranged.errors)")
        #expect(try await report("big.bin")["present"] as? Int == 65_536)
        let text = try await fixture.tidesync(["file-status", local("big.bin")])
        #expect(text.output.contains("big.bin: partial 3 % (64.0 KiB of 2.0 MiB)"), "\(text.output)")
        try await refusedRanges()

        // Evict keeps size and mtime, frees the blocks, and a read brings the right bytes back.
        try await evictThenRead(version: 1)

        // Whole (on a terminal: a progress bar), then evicted again, then read again.
        let command = [Binary.path!, "hydrate", local("big.bin")].map { "'\($0)'" }.joined(separator: " ")
        let whole = try await Binary.run("/usr/bin/script", ["-qec", command, "/dev/null"], environment: fixture.environment)
        #expect(whole.status == 0, "\(whole.output)\(whole.errors)")
        #expect(whole.output.contains("\u{1B}[K[###") && whole.output.contains("100 %") && whole.output.contains("/s")
                && whole.output.contains("Hydrated 2.0 MiB of 2.0 MiB"), "no progress bar on a terminal: \(whole.output)")
        #expect(try materialization("big.bin") == "materialized" && !holdsNoData("big.bin"))
        try await evictThenRead(version: 1)
        try await pinAndUnpin()
        try await refusalsForOpenFiles()
        try await evictAcrossRestart()
        try await refusalsOutsideAndWithoutDaemon()
    }

    /// The edit uploaded, the file is evicted; a restarted daemon marks it again from the
    /// state DB, and a read brings the edited bytes back.
    func evictAcrossRestart() async throws {
        try await eventually("the edit uploaded", timeout: .seconds(60)) { try await report("big.bin")["pending"] as? Bool == false }
        let edited = Self.content(1) + Data("local edit".utf8)
        let evicted = try await fixture.tidesync(["evict", local("big.bin")])
        #expect(evicted.status == 0, "\(evicted.errors)")
        #expect(holdsNoData("big.bin") && stat("big.bin").st_size == edited.count)
        #expect(await fixture.stopDaemon() == 0)
        try await startAndWait()
        #expect(try await report("big.bin")["state"] as? String == "dataless")
        #expect(FilesOnDemandTests.difference(try await read("big.bin"), edited) == nil)
    }

    func refusedRanges() async throws {
        for (range, words) in [("5", "OFFSET:LENGTH"), ("0:0", "more than 0"), ("x:1", "OFFSET:LENGTH"), ("-1:5", "OFFSET:LENGTH")] {
            let bad = try await fixture.tidesync(["hydrate", "--range=\(range)", local("big.bin")])
            #expect(bad.status != 0 && bad.errors.contains(words), "--range \(range): \(bad.status) \(bad.errors)")
        }
        let past = try await fixture.tidesync(["hydrate", "--range", "3MiB:1", local("big.bin")])
        #expect(past.status == 4 && past.errors.contains("past the end"), "\(past.status) \(past.errors)")
    }

    func evictThenRead(version: Int) async throws {
        let before = stat("big.bin")
        let evicted = try await fixture.tidesync(["evict", local("big.bin")])
        #expect(evicted.status == 0 && evicted.output.contains("evicted"), "\(evicted.output)\(evicted.errors)")
        let after = stat("big.bin")
        #expect(after.st_size == before.st_size && after.st_mtim.tv_sec == before.st_mtim.tv_sec
                && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec && after.st_ino == before.st_ino)
        #expect(after.st_blocks <= 8 && holdsNoData("big.bin"), "\(after.st_blocks) blocks after evict")
        #expect(try materialization("big.bin") == "dataless")
        #expect(try await report("big.bin")["state"] as? String == "dataless")
        #expect(FilesOnDemandTests.difference(try await read("big.bin"), Self.content(version)) == nil)
        #expect(try materialization("big.bin") == "materialized")
    }

    func pinAndUnpin() async throws {
        #expect(try await fixture.tidesync(["evict", local("big.bin")]).status == 0)
        let pinned = try await fixture.tidesync(["pin", local("big.bin")])
        #expect(pinned.status == 0 && pinned.output.contains("pinned"), "\(pinned.output)\(pinned.errors)")
        #expect(try materialization("big.bin") == "materialized" && !holdsNoData("big.bin"), "pin did not download it")
        let status = try await report("big.bin")
        #expect(status["pinned"] as? Bool == true && status["state"] as? String == "materialized", "\(status)")
        let refused = try await fixture.tidesync(["evict", local("big.bin")])
        #expect(refused.status == 4 && refused.errors.contains("is pinned"), "\(refused.status) \(refused.errors)")
        #expect(!holdsNoData("big.bin"))
        #expect(try await fixture.tidesync(["unpin", local("big.bin")]).status == 0)
        #expect(try await report("big.bin")["pinned"] as? Bool == false)
    }

    func refusalsForOpenFiles() async throws {
        for (redirect, words) in [(">>", "open for writing"), ("<", "open in a program")] {
            let holder = try ChildProcess("/bin/sh", ["-c", "exec 3\(redirect)'\(local("big.bin"))'; exec sleep 60"])
            defer { kill(holder.processIdentifier, SIGKILL); holder.waitUntilExit() }
            try await eventually("the holder has the file open") {
                (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(holder.processIdentifier)/fd"))?.contains("3") == true
            }
            let refused = try await fixture.tidesync(["evict", local("big.bin")])
            #expect(refused.status == 4 && refused.errors.contains(words) && refused.errors.contains("sleep"),
                    "\(refused.status) \(refused.errors)")
            #expect(!holdsNoData("big.bin"))
        }
        // An edit not synced yet (the domain paused): pending, and not evicted.
        #expect(try await fixture.tidesync(["pause"]).status == 0)
        let handle = try #require(FileHandle(forWritingAtPath: local("big.bin")))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("local edit".utf8))
        try handle.close()
        #expect(try await report("big.bin")["pending"] as? Bool == true)
        let edited = try await fixture.tidesync(["evict", local("big.bin")])
        #expect(edited.status == 4 && edited.errors.contains("changes not synced yet"), "\(edited.status) \(edited.errors)")
        #expect(try await fixture.tidesync(["resume"]).status == 0)
    }

    func refusalsOutsideAndWithoutDaemon() async throws {
        for command in [["file-status"], ["pin"], ["unpin"], ["evict"], ["hydrate"]] {
            let outside = try await fixture.tidesync(command + ["/etc/hostname"])
            #expect(outside.status == 4 && outside.errors.contains("not in the folder of any domain"), "\(command): \(outside.errors)")
            let root = try await fixture.tidesync(command + [fixture.local])
            #expect(root.status == 4 && root.errors.contains("itself"), "\(command): \(root.errors)")
        }
        let missing = try await fixture.tidesync(["file-status", local("nothing-here")])
        #expect(missing.status == 4 && missing.errors.contains("does not exist"), "\(missing.errors)")
        #expect(await fixture.stopDaemon() == 0)
        for command in [["file-status"], ["pin"], ["unpin"], ["evict"], ["hydrate"]] {
            let stopped = try await fixture.tidesync(command + [local("big.bin")])
            #expect(stopped.status == 3 && stopped.errors.contains("not running"), "\(command): \(stopped.status) \(stopped.errors)")
        }
    }

    @Test("a remote change makes a placeholder dataless at the new version; a pinned folder's files come down whole, new ones too")
    func remoteChangesOfPlaceholders() async throws {
        try makeRemoteFolder("kept")
        try putOnServer(Self.content(1), at: "big.bin")
        try putOnServer(Self.content(1), at: "kept/a.bin")
        try await startAndWait()
        #expect(try materialization("a.bin") == "dataless")
        let pinned = try await fixture.tidesync(["pin", local("kept")])
        #expect(pinned.status == 0 && pinned.output.contains("1 placeholder"), "\(pinned.output)\(pinned.errors)")
        #expect(try materialization("a.bin") == "materialized")
        #expect(try await report("kept/a.bin")["pinned"] as? Bool == true)

        // big.bin partial: its new version comes down dataless; kept/a.bin's whole, and a
        // new file in the pinned folder whole too.
        #expect(try await fixture.tidesync(["hydrate", "--range", "0:4096", local("big.bin")]).status == 0)
        #expect(try materialization("big.bin") == "partial")
        let (big, a) = (try column("remote_etag", of: "big.bin"), try column("remote_etag", of: "a.bin"))
        try putOnServer(Self.content(2), at: "big.bin")
        try putOnServer(Self.content(2), at: "kept/a.bin")
        try putOnServer(Self.content(3), at: "kept/b.bin")
        // Recorded first, looked at without reading (a read would hydrate a placeholder).
        try await eventually("the new versions recorded", timeout: .seconds(60)) {
            try column("remote_etag", of: "big.bin") != big && column("remote_etag", of: "a.bin") != a
                && !column("remote_etag", of: "b.bin").isEmpty
        }
        #expect(try materialization("big.bin") == "dataless" && holdsNoData("big.bin"))
        #expect(try materialization("a.bin") + materialization("b.bin") == "materializedmaterialized")
        #expect(!holdsNoData("kept/a.bin") && !holdsNoData("kept/b.bin"),
                "a pinned folder's files came down as placeholders; log:\n\(fixture.log.suffix(20000))")
        #expect(try await report("kept/b.bin")["pinned"] as? Bool == true)
        #expect(FilesOnDemandTests.difference(try await read("big.bin"), Self.content(2)) == nil)
        #expect(FilesOnDemandTests.difference(try await read("kept/a.bin"), Self.content(2)) == nil)
        #expect(FilesOnDemandTests.difference(try await read("kept/b.bin"), Self.content(3)) == nil)
        try await movedIntoAPinnedFolder()
        try await conflictShown()
        try await pinWithTheServerStopped()
    }

    /// A placeholder moved into the pinned folder on the server, and one moved there here,
    /// come down whole; one moved out of it stays whole (nothing is evicted by a move).
    func movedIntoAPinnedFolder() async throws {
        try putOnServer(Self.content(4), at: "there.bin")
        try putOnServer(Self.content(5), at: "here.bin")
        try await eventually("the placeholders down", timeout: .seconds(60)) {
            try materialization("there.bin") == "dataless" && materialization("here.bin") == "dataless"
        }
        try #require(rename(disk + "/there.bin", disk + "/kept/there.bin") == 0)
        try #require(rename(local("here.bin"), local("kept/here.bin")) == 0)
        try await eventually("both whole in the pinned folder", timeout: .seconds(60)) {
            try materialization("there.bin") == "materialized" && materialization("here.bin") == "materialized"
        }
        #expect(!holdsNoData("kept/there.bin") && !holdsNoData("kept/here.bin"), "a file moved into a pinned folder stayed a placeholder")
        // Both were moves (not a delete and a new download, which a pin covers anyway).
        for name in ["kept/there.bin", "kept/here.bin"] {
            #expect(fixture.log.contains("\(name) was moved into a pinned folder: downloaded whole"), "\(name): \(fixture.log.suffix(3000))")
        }
        #expect(FilesOnDemandTests.difference(try await read("kept/there.bin"), Self.content(4)) == nil)
        #expect(FilesOnDemandTests.difference(try await read("kept/here.bin"), Self.content(5)) == nil)
        try #require(rename(local("kept/here.bin"), local("here.bin")) == 0)
        try await eventually("moved out on the server", timeout: .seconds(60)) { access(disk + "/here.bin", F_OK) == 0 }
        #expect(try materialization("here.bin") == "materialized" && !holdsNoData("here.bin"))
    }

    /// Both sides changed a small file: file-status says conflict, for it and for its copy.
    func conflictShown() async throws {
        try putOnServer(Data("first".utf8), at: "note.txt")
        try await eventually("note.txt down", timeout: .seconds(60)) { !(try column("remote_etag", of: "note.txt")).isEmpty }
        #expect(try await fixture.tidesync(["pause"]).status == 0)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: local("note.txt")))
        try putOnServer(Data("theirs".utf8), at: "note.txt")
        #expect(try await fixture.tidesync(["resume"]).status == 0)
        var copy = ""
        try await eventually("a conflict copy", timeout: .seconds(60)) {
            copy = (try FileManager.default.contentsOfDirectory(atPath: fixture.local)).first { $0.contains("conflicted copy") } ?? ""
            guard !copy.isEmpty else { return false }
            return try await report("note.txt")["conflict"] as? Bool == true
        }
        #expect(try await report(copy)["conflict"] as? Bool == true)
        #expect(try await report("big.bin")["conflict"] as? Bool == false)
    }

    /// A pin whose download fails (the server stopped) says so (exit 4); the file stays
    /// pinned, and the next start downloads it whole.
    func pinWithTheServerStopped() async throws {
        #expect(try await fixture.tidesync(["evict", local("big.bin")]).status == 0)
        try await apache.stop()
        let failed = try await fixture.tidesync(["pin", local("big.bin")])
        #expect(failed.status == 4 && failed.errors.contains("big.bin"), "\(failed.status) \(failed.errors)")
        #expect(holdsNoData("big.bin"))
        try await apache.restart()
        #expect(await fixture.stopDaemon() == 0)
        try await startAndWait()
        try await eventually("the pinned placeholder downloaded at the start", timeout: .seconds(60)) {
            try materialization("big.bin") == "materialized"
        }
        #expect(!holdsNoData("big.bin"))
        #expect(FilesOnDemandTests.difference(try await read("big.bin"), Self.content(2)) == nil)
        #expect(await fixture.stopDaemon() == 0)
    }
}

/// The refusals that need no fanotify: no daemon, and a domain without files on demand.
@Suite("file commands refused without files on demand",
       .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"))
struct FileCommandsRefusalTests {
    @Test("every file command says the daemon is not running (exit 3) or files on demand is off (exit 4)")
    func refusedWithoutFilesOnDemand() async throws {
        let fixture = try DaemonFixture()
        try fixture.configure(poll: "1h", placeholders: "mode = \"off\"")
        try Data("hello".utf8).write(to: URL(fileURLWithPath: fixture.local + "/a.txt"))
        let commands = [["file-status"], ["file-status", "--json"], ["pin"], ["unpin"], ["evict"], ["hydrate"], ["hydrate", "--range", "0:1"]]
        for command in commands {
            let result = try await fixture.tidesync(command + [fixture.local + "/a.txt"])
            #expect(result.status == 3 && result.errors.contains("daemon is not running"), "\(command): \(result.status) \(result.errors)")
        }
        try fixture.startDaemon(arguments: ["--log-level", "debug"])
        #expect(try await fixture.waitUntilIdle(seconds: 60), "never idle; log:\n\(fixture.log.suffix(3000))")
        for command in commands {
            let result = try await fixture.tidesync(command + [fixture.local + "/a.txt"])
            #expect(result.status == 4 && result.errors.contains("files on demand: off"), "\(command): \(result.status) \(result.errors)")
        }
        let relative = try await fixture.tidesync(["file-status", "Cloud/a.txt"])
        #expect(relative.status == 4, "a relative path is taken from the working directory: \(relative.errors)")
        #expect(await fixture.stopDaemon() == 0)
    }
}
