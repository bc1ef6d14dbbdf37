import Foundation
import Synchronization
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `tidesync run --once` and files another process holds open for writing: a writer that
/// closes within a few seconds is waited for; one that does not is named, with its process.
@Suite("run --once and open writers", .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"))
final class RunOnceWriterTests: @unchecked Sendable {
    let home: String
    let local: String
    let store: String

    init() throws {
        home = temporaryPath("tidesync-writers-")
        local = home + "/Cloud"
        store = home + "/store"
        for folder in [local, store, home + "/.config/tidesync"] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        let config = "[[domain]]\nname = \"w\"\nlocal = \"~/Cloud\"\nremote = \"file://\(store)\"\n"
        try Data(config.utf8).write(to: URL(fileURLWithPath: home + "/.config/tidesync/config.toml"))
    }

    deinit { try? FileManager.default.removeItem(atPath: home) }

    /// A shell that opens `path` for appending on descriptor 3 and keeps it until the file
    /// `release` exists (then exits), or until it is killed.
    func holdOpen(_ path: String, until release: String) throws -> ChildProcess {
        try ChildProcess("/bin/sh", ["-c", "exec 3>>\"$1\"; while [ ! -e \"$2\" ]; do sleep 0.05 3>&-; done", "sh", path, release],
                         stdout: .inherited, stderr: .inherited)
    }

    /// Starts `tidesync run --once`; its messages go to `log`.
    func startRunOnce(log: String) throws -> ChildProcess {
        try Binary.start(["run", "--once"], environment: ["HOME": home, "XDG_CONFIG_HOME": home + "/.config",
                                                          "XDG_STATE_HOME": home + "/.state", "PATH": "/usr/bin:/bin"], log: log)
    }

    func runOnce() async throws -> Binary.Result {
        let log = home + "/run.log"
        let process = try startRunOnce(log: log)
        await waitForExit(process)
        let errors = String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self)
        return Binary.Result(status: process.terminationStatus, output: "", errors: errors)
    }

    /// Waits until `process` holds a descriptor to `path` (the shell has opened it).
    func waitUntilHeld(_ path: String, by process: ChildProcess) async throws {
        let fds = "/proc/\(process.processIdentifier)/fd"
        let held = try await waitUntil(timeout: .seconds(30), every: .milliseconds(10)) {
            ((try? FileManager.default.contentsOfDirectory(atPath: fds)) ?? []).contains {
                (try? FileManager.default.destinationOfSymbolicLink(atPath: fds + "/" + $0)) == path
            }
        }
        if !held { Issue.record("the writer never opened \(path)") }
    }

    @Test("a file held open for writing throughout is not uploaded, and the message names the process holding it")
    func namesTheWriter() async throws {
        let path = local + "/report.txt"
        try Data("half written".utf8).write(to: URL(fileURLWithPath: path))
        let writer = try holdOpen(path, until: home + "/never")
        defer { kill(writer.processIdentifier, SIGKILL) }
        try await waitUntilHeld(path, by: writer)
        let result = try await runOnce()
        #expect(result.status != 0, "run --once reported success with a file open for writing")
        #expect(result.errors.contains("still open for writing, such as report.txt"), "\(result.errors)")
        #expect(result.errors.contains("(by sh, pid \(writer.processIdentifier))"), "\(result.errors)")
        #expect(!FileManager.default.fileExists(atPath: store + "/report.txt"), "uploaded while a writer held it")
    }

    @Test("a writer that closes the file while run --once waits for it: the file is then uploaded")
    func waitsForAShortWriter() async throws {
        let path = local + "/Notes.rtfd/TXT.rtf"
        try FileManager.default.createDirectory(atPath: local + "/Notes.rtfd", withIntermediateDirectories: true)
        try Data("first draft".utf8).write(to: URL(fileURLWithPath: path))
        let release = home + "/release"
        let writer = try holdOpen(path, until: release)
        defer { kill(writer.processIdentifier, SIGKILL) }
        try await waitUntilHeld(path, by: writer)
        let log = home + "/run.log"
        let run = try startRunOnce(log: log)
        // Closed once run --once has said it waits, by a thread of its own: the test's
        // threads may be busy for seconds on a loaded machine, longer than run --once waits.
        let told = Mutex(false)
        Thread {
            let end = Date().addingTimeInterval(60)
            while Date() < end, run.isRunning {
                if (try? String(contentsOfFile: log, encoding: .utf8))?.contains("waiting for them") == true {
                    told.withLock { $0 = true }
                    break
                }
                usleep(5_000)
            }
            _ = FileManager.default.createFile(atPath: release, contents: nil)
        }.start()
        await waitForExit(run)
        let errors = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(told.withLock { $0 }, "run --once never said it waits for the writer: \(errors)")
        #expect(run.terminationStatus == 0, "\(errors)")
        #expect(FileManager.default.contents(atPath: store + "/Notes.rtfd/TXT.rtf") == Data("first draft".utf8))
    }
}
