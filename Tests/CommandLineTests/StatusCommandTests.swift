@testable import Control
import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `tidesync status`, `conflicts`, `pause`/`resume`/`sync-now` against a real daemon.
@Suite("status of the real daemon", .serialized,
       .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"))
final class StatusCommandTests {
    let fixture: DaemonFixture
    let schema: SchemaValidator

    init() throws {
        fixture = try DaemonFixture()
        schema = try SchemaValidator(schemaFile: DaemonFixture.repository + "/packaging/schema/status.schema.json")
    }

    @Test("idle on Apache: screen, JSON that follows the schema, exit 0; stopped daemon: exit 3 from the DB")
    func idleThenStopped() async throws {
        let collection = try #require(try DaemonFixture.sharedApacheCollection(), "the private Apache is not running (packaging/test.sh starts it)")
        // No polling: the samples below, taken after the wait, must not meet a poll pass.
        try fixture.configure(url: collection.url, disk: collection.disk, poll: "1h")
        try Data("hello".utf8).write(to: URL(fileURLWithPath: fixture.local + "/a.txt"))
        try FileManager.default.createDirectory(atPath: fixture.local + "/docs", withIntermediateDirectories: true)
        try fixture.startDaemon()
        #expect(try await fixture.waitUntilIdle(), "never idle; log:\n\(fixture.log.suffix(2000))")

        let (status, json, text) = try await fixture.statusJSON()
        #expect(status == 0)
        #expect(schema.problems(json).isEmpty, "\(schema.problems(json))\n\(text)")
        let domain = DaemonFixture.firstDomain(json)
        #expect(domain["state"] as? String == "idle")
        #expect(domain["remote"] as? String == collection.url)
        #expect(domain["lastCompleteSync"] != nil)
        #expect((domain["counts"] as? [String: Any])?["files"] as? Int == 1)
        #expect((domain["counts"] as? [String: Any])?["folders"] as? Int == 1)

        let screen = try await fixture.tidesync(["status"])
        #expect(screen.status == 0)
        #expect(screen.output.contains("st: idle, in sync"), "\(screen.output)")
        #expect(screen.output.contains("\(fixture.local) ⇄ \(collection.url)"))

        #expect(await fixture.stopDaemon() == 0)
        let stopped = try await fixture.statusJSON()
        #expect(stopped.status == 3)
        #expect(schema.problems(stopped.json).isEmpty, "\(schema.problems(stopped.json))")
        #expect((stopped.json["daemon"] as? [String: Any])?["running"] as? Bool == false)
        #expect((DaemonFixture.firstDomain(stopped.json)["counts"] as? [String: Any])?["files"] as? Int == 1)
        let stoppedScreen = try await fixture.tidesync(["status"])
        #expect(stoppedScreen.status == 3)
        #expect(stoppedScreen.output.contains("NOT RUNNING"))
        let pause = try await fixture.tidesync(["pause"])
        #expect(pause.status == 3)
        #expect(pause.errors.contains("not running"))
    }

    @Test("after `run --once` status (daemon stopped) says when both sides last agreed, and counts a bundle")
    func runOnceRecordsLastSync() async throws {
        try fixture.configure()
        try FileManager.default.createDirectory(atPath: fixture.local + "/Slides.key/Data", withIntermediateDirectories: true)
        try Data("x".utf8).write(to: URL(fileURLWithPath: fixture.local + "/Slides.key/Data/a"))
        let once = try await fixture.tidesync(["run", "--once"])
        #expect(once.status == 0, "\(once.errors)")
        let screen = try await fixture.tidesync(["status"])
        #expect(screen.status == 3)
        #expect(!screen.output.contains("last complete sync: never"), "\(screen.output)")
        #expect(screen.output.contains("1 bundle"), "\(screen.output)")
    }

    @Test("while a large file uploads to Apache, status shows its progress moving")
    func uploadProgress() async throws {
        let collection = try #require(try DaemonFixture.sharedApacheCollection(), "the private Apache is not running (packaging/test.sh starts it)")
        try fixture.configure(url: collection.url, disk: collection.disk)
        try fixture.startDaemon()
        #expect(try await fixture.waitUntilIdle())
        // Written beside the folder and moved in whole: a file still being written (or whose
        // descriptor a child forked by another test holds for a moment) is held back by
        // design, and under load that wait could outlast the sampling window.
        try await CrashRecoveryTests.makeBigFile(fixture.home + "/big.bin", megabytes: 400)
        #expect(rename(fixture.home + "/big.bin", fixture.local + "/big.bin") == 0)
        // Sampled over the control socket from a thread of its own, every 10 ms: a
        // `tidesync status` process per sample is too slow to see a loopback upload move
        // twice on a loaded machine. The command line's JSON is checked once, mid-upload.
        let socket = fixture.socket, disk = collection.disk
        let samples = await withCheckedContinuation { (done: CheckedContinuation<[Transfer], Never>) in
            Thread {
                var seen: [Transfer] = []
                let end = Date().addingTimeInterval(60)
                while Date() < end {
                    if case .success(let answer) = ControlClient.send(ControlRequest(.status), to: socket),
                       let upload = answer.status?.domains.first?.transfers.first(where: { $0.path == "big.bin" }),
                       seen.last?.bytesDone != upload.bytesDone {
                        seen.append(upload)
                    }
                    if seen.count >= 3 || (!seen.isEmpty && FileManager.default.fileExists(atPath: disk + "/big.bin")) { break }
                    usleep(10_000)
                }
                done.resume(returning: seen)
            }.start()
        }
        let seen = samples.map(\.bytesDone)
        #expect(seen.count >= 2, "progress seen: \(seen)")
        #expect(seen == seen.sorted(), "progress went backwards: \(seen)")
        #expect(samples.allSatisfy { $0.direction == "upload" && $0.bytesTotal == 400 << 20 })
        let json = try await fixture.statusJSON().json
        #expect(schema.problems(json).isEmpty, "\(schema.problems(json))")
        #expect(try await fixture.waitUntilIdle(seconds: 60))
    }

    @Test("a conflict is recorded: status counts it, conflicts lists it with both versions")
    func conflictRecorded() async throws {
        // Both sides change before the start: the first pass sees them; no polling needed.
        try fixture.configure(poll: "1h")
        try Data("base".utf8).write(to: URL(fileURLWithPath: fixture.local + "/report.txt"))
        let synced = try await fixture.tidesync(["run", "--once"])
        #expect(synced.status == 0, "\(synced.errors)")
        try Data("mine, longer".utf8).write(to: URL(fileURLWithPath: fixture.local + "/report.txt"))
        try Data("theirs".utf8).write(to: URL(fileURLWithPath: fixture.remoteDisk + "/report.txt"))
        try fixture.startDaemon()
        #expect(try await fixture.waitUntilIdle(), "never idle; log:\n\(fixture.log.suffix(2000))")
        let json = try await fixture.statusJSON().json
        let conflicts = DaemonFixture.firstDomain(json)["conflicts"] as? [String: Any]
        #expect(conflicts?["count"] as? Int == 1)
        let listed = try await fixture.tidesync(["conflicts", "--json"])
        #expect(listed.status == 0)
        let list = try #require(try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [String: Any])
        #expect(schema.problems(list, schema: schema.definition("conflictList")).isEmpty)
        let entry = try #require((list["conflicts"] as? [[String: Any]])?.first)
        #expect(entry["original"] as? String == "report.txt")
        let copy = try #require(entry["copy"] as? String)
        #expect(copy.hasPrefix("report (conflicted copy "))
        #expect(entry["localSize"] as? Int == 12)
        #expect(entry["baseVersion"] != nil && entry["remoteVersion"] != nil)
        #expect(FileManager.default.fileExists(atPath: fixture.local + "/" + copy))
        #expect(try await fixture.tidesync(["conflicts"]).output.contains("this machine's version kept as: \(copy)"))
        // Also without the daemon, from the state DB.
        await fixture.stopDaemon()
        #expect(try await fixture.tidesync(["conflicts"]).output.contains(copy))
    }

    @Test("pause holds new work, resume and sync-now start it at once")
    func pauseResumeSyncNow() async throws {
        try fixture.configure(poll: "1h")
        try fixture.startDaemon()
        #expect(try await fixture.waitUntilIdle())
        #expect(try await fixture.tidesync(["pause", "st"]).output.contains("Paused: st"))
        let paused = try await fixture.statusJSON()
        #expect(paused.status == 1)
        #expect(DaemonFixture.firstDomain(paused.json)["state"] as? String == "paused")
        #expect(try await fixture.tidesync(["pause", "nope"]).status == 4)
        #expect(try await fixture.tidesync(["resume"]).status == 0)
        // poll_interval is an hour: only sync-now brings the new file over.
        try Data("new".utf8).write(to: URL(fileURLWithPath: fixture.local + "/new.txt"))
        #expect(try await fixture.tidesync(["sync-now"]).status == 0)
        #expect(try await waitUntil(timeout: .seconds(10)) { FileManager.default.fileExists(atPath: fixture.remoteDisk + "/new.txt") })
    }

    @Test("Apache stops: error and next retry shown, exit 2; it comes back: idle again")
    func serverStoppedAndBack() async throws {
        // Stopped at the end, or by its deinit when the test fails.
        let apache = try await PrivateApache.start()
        let collection = try apache.collection()
        try fixture.configure(url: collection.url, disk: collection.disk, password: apache.password)
        try fixture.startDaemon()
        #expect(try await fixture.waitUntilIdle(), "never idle; log:\n\(fixture.log.suffix(2000))")
        // The retry that status names is set by a pass that failed after the stop (ISO 8601
        // dates have whole seconds).
        let stopped = Date().addingTimeInterval(-1)
        try await apache.stop()
        // Generous: a refused connection is retried until the 15 s connect timeout before
        // the pass fails (about 15 s here on an idle machine).
        var error: [String: Any] = [:]
        #expect(try await waitUntil(timeout: .seconds(60)) {
            let (status, json, _) = try await fixture.statusJSON()
            error = DaemonFixture.firstDomain(json)["error"] as? [String: Any] ?? [:]
            return status == 2
        }, "never in error; log:\n\(fixture.log.suffix(2000))")
        #expect(error["code"] as? String == "serverUnreachable")
        let retry = try #require((error["nextRetry"] as? String).flatMap(ISO8601DateFormatter().date(from:)))
        #expect(retry > stopped, "the next retry \(retry) is not after the failure (the server stopped at \(stopped))")
        let screen = try await fixture.tidesync(["status"])
        #expect(screen.status == 2)
        #expect(screen.output.contains("ERROR: server unreachable"))
        #expect(screen.output.contains("next retry:"))
        try await apache.restart()
        try Data("after".utf8).write(to: URL(fileURLWithPath: fixture.local + "/after.txt"))
        // Idle may be seen before the watcher has settled the new file: wait for the file.
        #expect(try await waitUntil(timeout: .seconds(90)) { FileManager.default.fileExists(atPath: collection.disk + "/after.txt") },
                "after.txt never reached the server; log:\n\(fixture.log.suffix(2000))")
        #expect(try await fixture.waitUntilIdle(seconds: 30), "never recovered; log:\n\(fixture.log.suffix(2000))")
        try await apache.stop()
    }
}

/// An Apache mod_dav of this test alone (packaging/dav-server.sh), which it can stop and
/// start again on the same port without disturbing the shared one.
final class PrivateApache {
    let directory: String
    let values: [String: String]

    /// Starts it; the script's wait for Apache's first answer runs off the test threads.
    /// With `tls` (a PEM certificate and its key) the shares are served over HTTPS too.
    static func start(tls: (certificate: String, key: String)? = nil) async throws -> PrivateApache {
        let directory = "/tmp/tidesync-pa-" + UUID().uuidString.prefix(8)
        if let tls { try installCertificate(tls, in: directory) }
        let result = try await onOwnThread { try shell(["bash", DaemonFixture.repository + "/packaging/dav-server.sh", "start", directory]) }
        guard result.status == 0 else { throw ControlFailure(.failed, "dav-server.sh start failed: \(result.errors)") }
        return try PrivateApache(directory: directory)
    }

    private init(directory: String) throws {
        self.directory = directory
        let env = try String(contentsOfFile: directory + "/env", encoding: .utf8)
        var values: [String: String] = [:]
        for line in env.split(separator: "\n") where line.hasPrefix("export ") {
            let pair = line.dropFirst("export ".count).split(separator: "=", maxSplits: 1)
            if pair.count == 2 { values[String(pair[0])] = String(pair[1]) }
        }
        self.values = values
    }

    var password: String { values["TIDESYNC_TEST_DAV_PASSWORD"] ?? "" }

    /// `https://127.0.0.1:PORT` when it serves HTTPS.
    var tlsOrigin: String? { values["TIDESYNC_TEST_DAV_TLS_ORIGIN"] }

    /// Puts `tls` where packaging/dav-server.sh looks for it (`DIR/tls/`).
    static func installCertificate(_ tls: (certificate: String, key: String), in directory: String) throws {
        let folder = directory + "/tls"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for (source, name) in [(tls.certificate, "cert.pem"), (tls.key, "key.pem")] {
            try? FileManager.default.removeItem(atPath: folder + "/" + name)
            try FileManager.default.copyItem(atPath: source, toPath: folder + "/" + name)
        }
    }

    /// What Apache said while it started (`restart`) and in its error log.
    var startLog: String {
        ["startup.log", "error.log"].map { (try? String(contentsOfFile: directory + "/" + $0, encoding: .utf8)) ?? "" }.joined(separator: "\n")
    }

    /// Serves another certificate on the same port: swaps the files and restarts Apache
    /// gracefully (it reads its certificates again), then waits until it serves again.
    func replaceCertificate(_ tls: (certificate: String, key: String)) async throws {
        let before = startLog.components(separatedBy: "resuming normal operations").count
        try Self.installCertificate(tls, in: directory)
        // SIGUSR1 is Apache's graceful restart (what `apache2 -k graceful` sends).
        let pid = (try? String(contentsOfFile: directory + "/httpd.pid", encoding: .utf8))
            .flatMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        guard let pid, kill(pid, SIGUSR1) == 0 else { throw ControlFailure(.failed, "cannot signal Apache in \(directory)") }
        guard try await waitUntil(timeout: .seconds(30), { self.startLog.components(separatedBy: "resuming normal operations").count > before }) else {
            throw ControlFailure(.failed, "Apache did not restart: \(startLog)")
        }
    }

    /// Puts `data` at `name` in the collection on `disk` as another client would, whole at
    /// once: written beside the collection (a poll would list a temporary inside it, bring
    /// it down, and see the rename as a move), then renamed in.
    func put(_ data: Data, at name: String, disk: String) throws {
        let temporary = (disk as NSString).deletingLastPathComponent + "/.incoming-" + UUID().uuidString
        try data.write(to: URL(fileURLWithPath: temporary))
        if let owner = values["TIDESYNC_TEST_DAV_OWNER"] {
            try FileManager.default.setAttributes([.ownerAccountName: owner, .groupOwnerAccountName: owner], ofItemAtPath: temporary)
        }
        guard rename(temporary, disk + "/" + name) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: disk + "/" + name, NSLocalizedDescriptionKey: reason])
        }
    }

    func collection() throws -> (url: String, disk: String) {
        let name = "c"
        let disk = values["TIDESYNC_TEST_DAV_INF_ROOT"]! + "/" + name
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        if getuid() == 0, let owner = values["TIDESYNC_TEST_DAV_OWNER"] {
            try FileManager.default.setAttributes([.ownerAccountName: owner, .groupOwnerAccountName: owner], ofItemAtPath: disk)
        }
        return (values["TIDESYNC_TEST_DAV_INF_URL"]! + name + "/", disk)
    }

    /// Stops Apache (the script waits for its processes to end) off the test threads.
    func stop() async throws {
        _ = try await onOwnThread { [directory] in try Self.shell(["bash", DaemonFixture.repository + "/packaging/dav-server.sh", "stop", directory]) }
    }

    /// The clean-up of a failed test (a deinit cannot wait); a no-op when stopped.
    func stopAtEnd() {
        _ = try? Self.shell(["bash", DaemonFixture.repository + "/packaging/dav-server.sh", "stop", directory])
    }

    /// Starts Apache again from the configuration `start` wrote: same port, same password.
    func restart() async throws {
        let owner = values["TIDESYNC_TEST_DAV_OWNER"] ?? "www-data"
        let environment = ["APACHE_RUN_DIR": directory + "/run", "APACHE_LOCK_DIR": directory + "/lock",
                           "APACHE_LOG_DIR": directory, "APACHE_PID_FILE": directory + "/httpd.pid",
                           "APACHE_RUN_USER": owner, "APACHE_RUN_GROUP": owner, "LANG": "C", "PATH": "/usr/sbin:/usr/bin:/bin"]
        let result = try await onOwnThread { [directory] in try Self.shell(["/usr/sbin/apache2", "-f", directory + "/httpd.conf", "-E", directory + "/startup.log", "-k", "start"], environment: environment) }
        guard result.status == 0 else { throw ControlFailure(.failed, "apache2 -k start failed: \(result.errors)") }
    }

    deinit {
        stopAtEnd()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs `arguments` and waits for its pid, stdin and stdout on /dev/null and stderr in a
    /// log. Not `Process`: Foundation watches a child through a descriptor the daemonized Apache
    /// inherits and never closes, so `waitUntilExit` would wait for Apache's end. Not `system`
    /// either: its child inherits every descriptor the test process has open without
    /// `O_CLOEXEC` (Foundation's `Data.write` opens so), and an Apache started at the moment
    /// another test writes a file kept that file open for writing for the rest of its life, so
    /// the daemon under test held it back as "still open for writing" (the fresh-clone flakes
    /// of issue 13). Every descriptor above 2 is closed in the child.
    static func shell(_ arguments: [String], environment: [String: String] = [:]) throws -> Binary.Result {
        let log = temporaryPath("tidesync-pa-") + ".log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        var merged = ProcessInfo.processInfo.environment
        merged.merge(environment) { _, given in given }
        let status = try spawnClosingDescriptors(arguments, environment: merged, stderr: log)
        let errors = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return Binary.Result(status: status == 0 ? 0 : 1, output: "", errors: errors)
    }
}

@Suite("children the tests start")
struct SpawnedChildTests {
    /// A new folder holding `held.txt`, open for writing in this process through a handle
    /// that, as `Data.write`'s, has no O_CLOEXEC.
    static func holdingAFile() throws -> (folder: String, held: FileHandle) {
        let folder = temporaryPath("tidesync-spawn-")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: folder + "/held.txt", contents: nil))
        return (folder, try #require(FileHandle(forWritingAtPath: folder + "/held.txt")))
    }

    @Test("a child started by spawnClosingDescriptors inherits no file the test process has open for writing")
    func inheritsNothing() throws {
        let (folder, held) = try Self.holdingAFile()
        defer {
            try? held.close()
            try? FileManager.default.removeItem(atPath: folder)
        }
        let listing = folder + "/fds.txt"
        let status = try spawnClosingDescriptors(["/bin/sh", "-c", "ls -l /proc/$$/fd/ > '\(listing)'"], environment: [:],
                                                 stderr: folder + "/err.txt")
        #expect(status == 0)
        let descriptors = try String(contentsOfFile: listing, encoding: .utf8)
        #expect(descriptors.contains("fds.txt"), "the listing is not of the child: \(descriptors)")
        #expect(!descriptors.contains("held.txt"), "the child inherited the test's open file: \(descriptors)")
    }

    /// Foundation's `Process` passed such a descriptor on: a daemon one test started kept a
    /// file another test was writing open for its whole life, and the scenario test's
    /// bundle was held back pass after pass.
    @Test("children started by Binary.start, Binary.run and runTool inherit no file the test process has open for writing")
    func childProcessInheritsNothing() async throws {
        let (folder, held) = try Self.holdingAFile()
        defer {
            try? held.close()
            try? FileManager.default.removeItem(atPath: folder)
        }
        let list = "ls -l /proc/$$/fd/"
        let started = try Binary.start(["-c", list], environment: [:], executable: "/bin/sh", output: folder + "/started.txt")
        await waitForExit(started)
        let ran = try await Binary.run("/bin/sh", ["-c", list], environment: nil)
        #expect(runTool("/bin/sh", ["-c", list + " > '\(folder)/tool.txt'"]) == 0)
        for (how, listing) in [("Binary.start", readFile(folder + "/started.txt") ?? ""), ("Binary.run", ran.output),
                               ("runTool", readFile(folder + "/tool.txt") ?? "")] {
            #expect(listing.contains("->"), "\(how): no listing: \(listing)")
            #expect(!listing.contains("held.txt"), "\(how): the child inherited the test's open file: \(listing)")
        }
    }

    /// A child started from a thread that blocks a signal does not block it: Apache started
    /// so never took SIGUSR1, its graceful restart (the certificate change of `ServerTrustTests`).
    @Test("a child starts with no signal blocked, whatever the starting thread blocks")
    func childSignalMaskIsClean() async throws {
        let status = try await onOwnThread { () throws -> String in
            var blocked = sigset_t()
            sigemptyset(&blocked)
            sigaddset(&blocked, SIGUSR2)
            pthread_sigmask(SIG_BLOCK, &blocked, nil)
            // grep reads its own mask (a shell's would be its own business: it blocks
            // signals around its forks).
            let (_, output, _) = try ChildProcess.collect("/bin/grep", ["SigBlk", "/proc/self/status"])
            return String(decoding: output, as: UTF8.self)
        }
        #expect(status.contains("SigBlk:") && status.contains("0000000000000000"), "the child blocks signals: \(status)")
    }
}
