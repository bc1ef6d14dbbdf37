import Foundation
import Testing
import TestSupport

/// The shared helpers keep their promises: a seed replays, trees are walked as asked,
/// waits end on the condition or the deadline, and tools report their exit status.
@Suite("the shared test support")
struct TestSupportTests {
    @Test("a seed replays the same numbers, and spreading a seed is the old TwoClientWorkload start")
    func seedsReplay() {
        var first = SeededRandom(seed: 42), second = SeededRandom(seed: 42)
        #expect((0..<100).map { _ in first.next() } == (0..<100).map { _ in second.next() })
        var zero = SeededRandom(seed: 0)
        #expect(zero.next() == 0xE220_A839_7B1D_CDAF)  // SplitMix64's first output for 0
        var spread = SeededRandom(spreading: 7), by = SeededRandom(seed: 7 &* 0x9E37_79B9_7F4A_7C15 | 1)
        #expect(spread.next() == by.next())
        #expect((0..<1000).allSatisfy { _ in (0..<5).contains(spread.next(5)) })
        #expect(spread.pick([Int]()) == nil)
    }

    @Test("the walk leaves out what it is told to, descends where it is told to and reports each folder's names")
    func walk() throws {
        let root = temporaryPath("tidesync-support-")
        defer { removeTree(root) }
        try writeFile(root + "/a/b.txt", "b")
        try writeFile(root + "/a/.lock", "")
        try writeFile(root + "/skip/inside.txt", "x")
        try FileManager.default.createDirectory(atPath: root + "/empty", withIntermediateDirectories: true)
        var seen: [String: Bool] = [:], listed: [String: [String]] = [:]
        FileTree.walk(root, leaveOut: { $0 == ".lock" }, descend: { $0.name != "skip" },
                      listed: { listed[$0] = $1.sorted() }) { seen[$0.relative] = $0.isFolder }
        #expect(seen == ["a": true, "a/b.txt": false, "skip": true, "empty": true])
        #expect(listed == ["": ["a", "empty", "skip"], "a": [".lock", "b.txt"], "empty": []])
        #expect(readFile(root + "/a/b.txt") == "b")
        #expect(FileTree.differingPaths(["x": 1, "y": 2], ["y": 3, "z": 4]) == ["x", "y", "z"])
    }

    @Test("waitUntil ends once the condition holds, and says false at its deadline when it never does")
    func waits() async throws {
        var rounds = 0
        // An hour, not a minute: beside CPU hogs and the whole suite, a 1 ms sleep on Swift's
        // starved cooperative threads once took over 60 s (fresh-clone hog run of c7b4569), and
        // the wait rightly said false after two rounds. The suite's own timeout bounds it.
        #expect(try await waitUntil(timeout: .seconds(3600), every: .milliseconds(1)) { rounds += 1; return rounds == 3 })
        #expect(rounds == 3)
        #expect(try await !waitUntil(timeout: .milliseconds(20), every: .milliseconds(5)) { false })
    }

    @Test("a wait on progress goes on while the progress grows, and fails once it stands still")
    func waitsOnProgress() async throws {
        // Growing for 0.6 s, past a 0.2 s stall bound: still waited for.
        let start = ContinuousClock.now
        var step = 0
        try await eventually("the end", unlessStalledFor: .milliseconds(200), progress: { step += 1; return step }) {
            ContinuousClock.now - start > .milliseconds(600)
        }
        await withKnownIssue("no progress: the wait fails") {
            try await eventually("never", unlessStalledFor: .milliseconds(200), progress: { 7 }) { false }
        }
    }

    @Test("runTool gives the exit status, or -1 when the tool cannot start")
    func tools() {
        #expect(runTool("/bin/sh", ["-c", "exit 3"], silenced: true) == 3)
        #expect(runTool("/nonexistent/tool", []) == -1)
    }

    @Test("Binary.start keeps a log file it is told to keep (its inode may be named elsewhere), or starts a fresh one")
    func startLogs() async throws {
        let folder = temporaryPath("tidesync-support-")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { removeTree(folder) }
        let log = folder + "/log"
        try writeFile(log, "old\n")
        let inode = try FileManager.default.attributesOfItem(atPath: log)[.systemFileNumber] as? Int
        let kept = try Binary.start(["-c", "echo new >&2"], environment: [:], executable: "/bin/sh", log: log, keepingLog: true)
        await waitForExit(kept)
        #expect(try FileManager.default.attributesOfItem(atPath: log)[.systemFileNumber] as? Int == inode)
        #expect(readFile(log) == "new\n")  // written from its start, as DaemonFixture's log always was
        let fresh = try Binary.start(["-c", "echo out; echo err >&2"], environment: [:], executable: "/bin/sh",
                                     log: log, output: folder + "/out")
        await waitForExit(fresh)
        #expect(readFile(log) == "err\n" && readFile(folder + "/out") == "out\n")
    }
}
