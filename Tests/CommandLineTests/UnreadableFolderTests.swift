import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Folders that cannot be read (issue 13, item 1), with the real binary as an ordinary user:
/// root reads a `chmod 000` folder, so as root (CI) every `tidesync` here runs as uid 65534
/// through `setpriv`, and as another user it runs as that user.
@Suite("folders that cannot be read", .serialized,
       .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"))
final class UnreadableFolderTests {
    let fixture: DaemonFixture
    let schema: SchemaValidator

    init() throws {
        fixture = try DaemonFixture()
        schema = try SchemaValidator(schemaFile: DaemonFixture.repository + "/packaging/schema/status.schema.json")
    }

    @Test("a local folder made unreadable deletes nothing on the server, is named in status, and syncs once readable again")
    func localFolder() async throws {
        try fixture.configure(poll: "1h")
        let sub = fixture.local + "/sub"
        try FileManager.default.createDirectory(atPath: sub, withIntermediateDirectories: true)
        for name in ["a.txt", "b.txt", "c.txt"] { try write(name, to: sub + "/" + name) }
        let user = try Unprivileged(fixture)
        try await user.runOnce(expecting: "the first sync")
        let store = fixture.remoteDisk
        #expect(Self.names(in: store + "/sub") == ["a.txt", "b.txt", "c.txt"])

        #expect(chmod(sub, 0) == 0)
        defer { chmod(sub, 0o755) }  // so that the fixture can be removed
        try write("elsewhere", to: fixture.local + "/top.txt")
        try user.own(fixture.local + "/top.txt")
        let blind = try await user.run(["run", "--once"])
        #expect(blind.status == 0, "\(blind.errors)")
        #expect(blind.errors.contains("cannot be read (permission denied)"), "\(blind.errors)")
        #expect(Self.names(in: store + "/sub") == ["a.txt", "b.txt", "c.txt"], "the server lost files: \(blind.errors)")
        #expect(FileManager.default.fileExists(atPath: store + "/top.txt"), "the rest of the domain stopped syncing")

        let report = try await user.run(["status", "--json"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.output.utf8)) as? [String: Any], "\(report.output)")
        #expect(schema.problems(json).isEmpty, "\(schema.problems(json))")
        let folders = DaemonFixture.firstDomain(json)["unreadableFolders"] as? [[String: Any]] ?? []
        #expect(folders.count == 1, "\(report.output)")
        #expect(folders.first?["path"] as? String == "sub")
        #expect(folders.first?["side"] as? String == "local")
        #expect(folders.first?["reason"] as? String == "permission denied")
        let screen = try await user.run(["status"])
        #expect(screen.output.contains("local sub: permission denied"), "\(screen.output)")

        #expect(chmod(sub, 0o755) == 0)
        try write("new while unreadable", to: sub + "/d.txt")
        try user.own(sub + "/d.txt")
        try await user.runOnce(expecting: "the sync after the folder is readable again")
        #expect(Self.names(in: store + "/sub") == ["a.txt", "b.txt", "c.txt", "d.txt"])
        #expect(Self.names(in: sub) == ["a.txt", "b.txt", "c.txt", "d.txt"])
        let after = try await user.run(["status", "--json"])
        let cleared = (try? JSONSerialization.jsonObject(with: Data(after.output.utf8))) as? [String: Any] ?? [:]
        #expect(DaemonFixture.firstDomain(cleared)["unreadableFolders"] == nil, "\(after.output)")
    }

    @Test("a sync folder made unreadable as a whole deletes nothing on the server and is named in status")
    func syncFolder() async throws {
        try fixture.configure(poll: "1h")
        for name in ["a.txt", "b.txt"] { try write(name, to: fixture.local + "/" + name) }
        let user = try Unprivileged(fixture)
        try await user.runOnce(expecting: "the first sync")
        #expect(chmod(fixture.local, 0) == 0)
        defer { chmod(fixture.local, 0o755) }
        let blind = try await user.run(["run", "--once"])
        #expect(Self.names(in: fixture.remoteDisk) == ["a.txt", "b.txt"], "the server lost files: \(blind.errors)")
        let report = try await user.run(["status", "--json"])
        let json = (try? JSONSerialization.jsonObject(with: Data(report.output.utf8))) as? [String: Any] ?? [:]
        let folders = DaemonFixture.firstDomain(json)["unreadableFolders"] as? [[String: Any]] ?? []
        #expect(folders.first?["path"] as? String == "" && folders.first?["side"] as? String == "local", "\(report.output)")
        #expect(chmod(fixture.local, 0o755) == 0)
        try await user.runOnce(expecting: "the sync once readable again")
        #expect(Self.names(in: fixture.remoteDisk) == ["a.txt", "b.txt"])
    }

    @Test("a store folder the store cannot open (local-directory remote) deletes nothing locally and is named in status")
    func storeFolder() async throws {
        try fixture.configure(poll: "1h")
        let sub = fixture.local + "/sub"
        try FileManager.default.createDirectory(atPath: sub, withIntermediateDirectories: true)
        for name in ["a.txt", "b.txt", "c.txt"] { try write(name, to: sub + "/" + name) }
        let user = try Unprivileged(fixture)
        try await user.runOnce(expecting: "the first sync")
        let stored = fixture.remoteDisk + "/sub"
        #expect(Self.names(in: stored) == ["a.txt", "b.txt", "c.txt"])

        #expect(chmod(stored, 0) == 0)
        defer { chmod(stored, 0o755) }
        try write("local change", to: sub + "/a.txt")
        try user.own(sub + "/a.txt")
        let blind = try await user.run(["run", "--once"])
        #expect(blind.status == 0, "\(blind.errors)")
        #expect(Self.names(in: sub) == ["a.txt", "b.txt", "c.txt"], "local files were deleted: \(blind.errors)")
        let report = try await user.run(["status", "--json"])
        let json = (try? JSONSerialization.jsonObject(with: Data(report.output.utf8))) as? [String: Any] ?? [:]
        #expect(schema.problems(json).isEmpty, "\(schema.problems(json))")
        let folders = DaemonFixture.firstDomain(json)["unreadableFolders"] as? [[String: Any]] ?? []
        #expect(folders.first?["path"] as? String == "sub" && folders.first?["side"] as? String == "remote", "\(report.output)")

        #expect(chmod(stored, 0o755) == 0)
        try await user.runOnce(expecting: "the sync after the store folder is readable again")
        #expect((try? String(contentsOfFile: stored + "/a.txt", encoding: .utf8)) == "local change")
    }

    @Test("the daemon: a folder made unreadable is named in status; made readable again (IN_ATTRIB), what was put in it meanwhile syncs without a restart")
    func daemonWatcher() async throws {
        try fixture.configure(extra: "debounce = \"200ms\"\n", poll: "1h")
        let sub = fixture.local + "/sub"
        try FileManager.default.createDirectory(atPath: sub, withIntermediateDirectories: true)
        for name in ["a.txt", "b.txt", "c.txt"] { try write(name, to: sub + "/" + name) }
        let user = try Unprivileged(fixture)
        let daemon = try user.startDaemon()
        let store = fixture.remoteDisk
        #expect(try await waitUntil(timeout: .seconds(60)) { Self.names(in: store + "/sub").count == 3 }, "no first sync; log:\n\(fixture.log.suffix(2000))")

        #expect(chmod(sub, 0) == 0)
        defer { chmod(sub, 0o755) }
        let named = try await waitUntil(timeout: .seconds(60)) {
            let report = try await user.run(["status", "--json"])
            let json = (try? JSONSerialization.jsonObject(with: Data(report.output.utf8))) as? [String: Any] ?? [:]
            let folders = DaemonFixture.firstDomain(json)["unreadableFolders"] as? [[String: Any]] ?? []
            return folders.first?["path"] as? String == "sub"
        }
        #expect(named, "status never named the folder; log:\n\(fixture.log.suffix(2000))")
        // Made while the daemon cannot look into the folder (root can write there): the
        // pass this raises meets the folder unreadable again and leaves it.
        let warning = "cannot be read (permission denied)"
        let before = fixture.log.components(separatedBy: warning).count
        try write("made while unreadable", to: sub + "/d.txt")
        try user.own(sub + "/d.txt")
        #expect(try await waitUntil(timeout: .seconds(60)) { fixture.log.components(separatedBy: warning).count > before },
                "no pass met the folder again; log:\n\(fixture.log.suffix(2000))")
        #expect(Self.names(in: store + "/sub") == ["a.txt", "b.txt", "c.txt"])

        // Nothing but the folder's own IN_ATTRIB says it can be read again.
        #expect(chmod(sub, 0o755) == 0)
        #expect(try await waitUntil(timeout: .seconds(60)) { Self.names(in: store + "/sub").contains("d.txt") },
                "the folder made readable again was not synced; log:\n\(fixture.log.suffix(3000))")
        kill(daemon.processIdentifier, SIGTERM)
        await waitForExit(daemon)
    }

    func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    static func names(in folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { !$0.hasPrefix(".tidesync") }.sorted()
    }
}

/// Runs the binary as an ordinary user: uid 65534 through `setpriv` when the tests run as
/// root (the fixture's home is handed to it), else as the current user.
struct Unprivileged {
    static let uid: uid_t = 65534
    let fixture: DaemonFixture
    let binary: String

    /// Hands the fixture's home to uid 65534 (as root), with a copy of the binary when uid
    /// 65534 cannot reach the built one.
    init(_ fixture: DaemonFixture) throws {
        self.fixture = fixture
        var binary = Binary.path!
        if getuid() == 0 {
            if !Self.reachableByOthers(binary) {
                let copy = fixture.home + "/tidesync"
                try FileManager.default.copyItem(atPath: binary, toPath: copy)
                chmod(copy, 0o755)
                binary = copy
            }
        }
        self.binary = binary
        try own(fixture.home)
        if !fixture.remoteDisk.isEmpty, !fixture.remoteDisk.hasPrefix(fixture.home + "/") { try own(fixture.remoteDisk) }
    }

    /// Makes `path` (and everything below it) uid 65534's, as root; nothing otherwise.
    func own(_ path: String) throws {
        guard getuid() == 0 else { return }
        let result = Self.chown(path)
        guard result == 0 else { throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path]) }
    }

    static func chown(_ path: String) -> Int32 {
        runTool("/bin/chown", ["-R", "\(uid):\(uid)", path])
    }

    /// True when every folder above `path` can be searched and the file run by others.
    static func reachableByOthers(_ path: String) -> Bool {
        var st = stat()
        guard stat(path, &st) == 0, st.st_mode & S_IXOTH != 0, st.st_mode & S_IROTH != 0 else { return false }
        var folder = (path as NSString).deletingLastPathComponent
        while !folder.isEmpty, folder != "/" {
            guard stat(folder, &st) == 0, st.st_mode & S_IXOTH != 0 else { return false }
            folder = (folder as NSString).deletingLastPathComponent
        }
        return true
    }

    /// `tidesync ARGUMENTS` as the ordinary user, with the fixture's XDG directories.
    func run(_ arguments: [String]) async throws -> Binary.Result {
        if getuid() == 0 {
            return try await Binary.run("/usr/bin/setpriv", ["--reuid=\(Self.uid)", "--regid=\(Self.uid)", "--clear-groups", binary] + arguments,
                                        environment: fixture.environment)
        }
        return try await Binary.run(binary, arguments, environment: fixture.environment)
    }

    /// `tidesync run` in the background as the ordinary user, its stderr in the fixture's log.
    func startDaemon() throws -> ChildProcess {
        let process = try getuid() == 0
            ? Binary.start(["--reuid=\(Self.uid)", "--regid=\(Self.uid)", "--clear-groups", binary, "run"],
                           environment: fixture.environment, executable: "/usr/bin/setpriv", log: fixture.daemonLog)
            : Binary.start(["run"], environment: fixture.environment, executable: binary, log: fixture.daemonLog)
        fixture.daemon = process
        return process
    }

    /// `tidesync run --once`, which must converge.
    func runOnce(expecting what: String) async throws {
        let result = try await run(["run", "--once"])
        #expect(result.status == 0, "\(what): \(result.errors)")
    }
}
