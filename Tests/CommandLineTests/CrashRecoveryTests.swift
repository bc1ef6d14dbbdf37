import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `kill -9` of the real daemon at the worst moments; after a restart the sync converges,
/// no temporary or partial file is left on either side, and nothing else changed.
@Suite("crash recovery of the real binary", .serialized,
       .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"))
final class CrashRecoveryTests: @unchecked Sendable {
    let home: String
    let local: String
    /// The remote's files on disk (the server's disk for Apache).
    var remoteDisk = ""
    var environment: [String: String] = [:]

    enum Remote: String, CaseIterable, CustomTestStringConvertible {
        case localDirectory, apache
        var testDescription: String { rawValue }
        static var available: [Remote] {
            TestApache.depthInfinityConfigured ? allCases : [.localDirectory]
        }
    }

    init() throws {
        home = temporaryPath("tidesync-crash-")
        local = home + "/Cloud"
        try FileManager.default.createDirectory(atPath: local, withIntermediateDirectories: true)
    }

    deinit {
        if !remoteDisk.isEmpty { try? FileManager.default.removeItem(atPath: remoteDisk) }
        try? FileManager.default.removeItem(atPath: home)
    }

    /// Writes the config for `remote` and makes its empty remote folder.
    func configure(_ remote: Remote, transfers: Int = 4) throws {
        environment = ["HOME": home, "XDG_CONFIG_HOME": home + "/.config", "XDG_STATE_HOME": home + "/.state",
                       "PATH": "/usr/bin:/bin"]
        var domain = "[[domain]]\nname = \"crash\"\nlocal = \"~/Cloud\"\ntransfers = \(transfers)\npoll_interval = \"1s\"\n"
        switch remote {
        case .localDirectory:
            remoteDisk = home + "/store"
            try FileManager.default.createDirectory(atPath: remoteDisk, withIntermediateDirectories: true)
            domain += "remote = \"file://\(remoteDisk)\"\n"
        case .apache:
            let collection = "crash-" + UUID().uuidString.prefix(8)
            remoteDisk = TestApache.depthInfinityDiskRoot! + "/" + collection
            try FileManager.default.createDirectory(atPath: remoteDisk, withIntermediateDirectories: true)
            try TestApache.giveToServer(remoteDisk)
            domain += "remote = \"\(TestApache.depthInfinityURLText!)\(collection)/\"\nusername = \"\(TestApache.user!)\"\n"
            environment["TIDESYNC_PASSWORD_CRASH"] = TestApache.password
        }
        try FileManager.default.createDirectory(atPath: home + "/.config/tidesync", withIntermediateDirectories: true)
        try Data(("log_level = \"info\"\n" + domain).utf8).write(to: URL(fileURLWithPath: home + "/.config/tidesync/config.toml"))
    }

    /// Starts `tidesync run --once` in the background.
    func start() throws -> ChildProcess {
        try Binary.start(["run", "--once"], environment: environment)
    }

    /// Runs `tidesync run --once` to the end.
    func runToEnd() async throws -> Binary.Result {
        let log = home + "/run-once.log"
        let process = try Binary.start(["run", "--once"], environment: environment, log: log)
        await waitForExit(process)
        let errors = FileManager.default.contents(atPath: log) ?? Data()
        return Binary.Result(status: process.terminationStatus, output: "", errors: String(decoding: errors, as: UTF8.self))
    }

    func kill9(_ process: ChildProcess) async {
        kill(process.processIdentifier, SIGKILL)
        await waitForExit(process)
    }

    /// Every file below `root` with its size and a checksum, folders as -1; tidesync's lock
    /// file and Apache's `.DAV` property folders left out. Temporaries are kept.
    static func tree(_ root: String) -> [String: String] {
        var result: [String: String] = [:]
        FileTree.walk(root, leaveOut: { $0 == ".tidesync-store.lock" || $0 == ".DAV" }) { entry in
            result[entry.relative] = entry.isFolder ? "folder" : "\(entry.size):\(checksum(entry.absolute))"
        }
        return result
    }

    /// `tree(root)` on a thread of its own: big files are read whole by md5sum, which would
    /// hold a test thread for seconds. Async tests use this one; the sync one serves the
    /// conditions `waitOnOwnThread(for:timeout:until:)` polls on its own thread.
    static func tree(_ root: String) async -> [String: String] {
        (try? await onOwnThread { tree(root) }) ?? [:]
    }

    /// A checksum of a file's bytes: FNV-1a for small files, md5sum (fast C) for big ones.
    static func checksum(_ path: String) -> String {
        var st = stat()
        guard lstat(path, &st) == 0, st.st_size <= 1 << 20, let data = FileManager.default.contents(atPath: path) else {
            guard let (_, text, _) = try? ChildProcess.collect("/usr/bin/md5sum", [path]) else { return "?" }
            return String(decoding: text, as: UTF8.self).split(separator: " ").first.map(String.init) ?? "?"
        }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in data { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(hash, radix: 16)
    }

    /// The size of the biggest file directly in `folder` whose name starts with `prefix`
    /// (a transfer in progress); cheap enough to poll.
    static func partialSize(in folder: String, prefix: String) -> Int64 {
        var biggest: Int64 = 0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasPrefix(prefix) {
            var st = stat()
            if lstat(folder + "/" + name, &st) == 0 { biggest = max(biggest, Int64(st.st_size)) }
        }
        return biggest
    }

    /// Names that are temporaries of tidesync or Apache.
    static func temporaries(_ tree: [String: String]) -> [String] {
        tree.keys.filter {
            let name = ($0 as NSString).lastPathComponent
            return name.hasPrefix(".tidesync-") || name.hasPrefix(".davfs.tmp")
        }.sorted()
    }

    /// `makeBigFile` on a thread of its own (hundreds of MiB: seconds of writing).
    static func makeBigFile(_ path: String, megabytes: Int) async throws {
        try await onOwnThread { try makeBigFile(path, megabytes: megabytes) }
    }

    /// A file of `megabytes` MiB of a pattern that is not all zeros.
    static func makeBigFile(_ path: String, megabytes: Int) throws {
        var block = [UInt8](repeating: 0, count: 1 << 20)
        for index in block.indices { block[index] = UInt8(truncatingIfNeeded: index &* 31 &+ 7) }
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        for chunk in 0..<megabytes {
            block[0] = UInt8(truncatingIfNeeded: chunk)
            try handle.write(contentsOf: block)
        }
        try handle.close()
    }

    func expectConverged(_ expected: [String: String], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let result = try await runToEnd()
        #expect(result.status == 0, "\(result.errors.suffix(2000))", sourceLocation: sourceLocation)
        let localTree = await Self.tree(local), remoteTree = await Self.tree(remoteDisk)
        #expect(Self.temporaries(localTree).isEmpty, "local temporaries: \(Self.temporaries(localTree))", sourceLocation: sourceLocation)
        #expect(Self.temporaries(remoteTree).isEmpty, "remote temporaries: \(Self.temporaries(remoteTree))", sourceLocation: sourceLocation)
        #expect(localTree == expected, "local differs: \(FileTree.differingPaths(localTree, expected).prefix(5))", sourceLocation: sourceLocation)
        #expect(remoteTree == expected, "remote differs: \(FileTree.differingPaths(remoteTree, expected).prefix(5))", sourceLocation: sourceLocation)
    }

    @Test("kill -9 during the upload of a 300 MiB file", arguments: Remote.available)
    func killDuringUpload(remote: Remote) async throws {
        try configure(remote)
        try await Self.makeBigFile(local + "/big.bin", megabytes: 300)
        try Data("small".utf8).write(to: URL(fileURLWithPath: local + "/small.txt"))
        let expected = await Self.tree(local)
        let daemon = try start()
        let partial = remote == .apache ? ".davfs.tmp" : ".tidesync-tmp-"
        // The store's PUT is atomic (Apache: .davfs.tmp renamed when complete): while the
        // bytes arrive, no reader sees a file under the real name.
        let visibleEarly = Flag()
        let caught = await waitOnOwnThread(for: daemon, timeout: .seconds(60)) { [remoteDisk] in
            guard Self.partialSize(in: remoteDisk, prefix: partial) > 20 << 20 else { return false }
            visibleEarly.value = FileManager.default.fileExists(atPath: remoteDisk + "/big.bin")
            return true
        }
        await kill9(daemon)
        #expect(caught, "the upload was never seen in progress")
        #expect(!visibleEarly.value, "a partial upload was visible under its real name")
        try await expectConverged(expected)
    }

    @Test("kill -9 during the download of a 300 MiB file", arguments: Remote.available)
    func killDuringDownload(remote: Remote) async throws {
        try configure(remote)
        try await Self.makeBigFile(remoteDisk + "/big.bin", megabytes: 300)
        try Data("small".utf8).write(to: URL(fileURLWithPath: remoteDisk + "/small.txt"))
        if remote == .apache, getuid() == 0, let owner = TestApache.owner {
            for name in ["big.bin", "small.txt"] {
                try FileManager.default.setAttributes([.ownerAccountName: owner], ofItemAtPath: remoteDisk + "/" + name)
            }
        }
        let expected = await Self.tree(remoteDisk)
        let daemon = try start()
        let caught = await waitOnOwnThread(for: daemon, timeout: .seconds(60)) { [local] in Self.partialSize(in: local, prefix: ".tidesync-part-") > 20 << 20 }
        await kill9(daemon)
        #expect(caught, "the download was never seen in progress")
        try await expectConverged(expected)
    }

    @Test("SIGTERM stops the running daemon gracefully with exit status 0")
    func sigterm() async throws {
        try configure(.localDirectory)
        try Data("x".utf8).write(to: URL(fileURLWithPath: local + "/x.txt"))
        let process = try Binary.start(["run"], environment: environment)
        let synced = await waitOnOwnThread(for: process, timeout: .seconds(30)) { [remoteDisk] in FileManager.default.fileExists(atPath: remoteDisk + "/x.txt") }
        #expect(synced)
        kill(process.processIdentifier, SIGTERM)
        await waitForExit(process)
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
    }

    @Test("kill -9 at random moments of a 2 000-file initial sync", arguments: Remote.available)
    func killDuringInitialSync(remote: Remote) async throws {
        try configure(remote, transfers: 8)
        var generator = SeededRandom(seed: 20261123)
        for index in 0..<2000 {
            let folder = local + "/d\(index % 40)"
            if index < 40 { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
            let size = Int.random(in: 1...4096, using: &generator)
            try Data((0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) })
                .write(to: URL(fileURLWithPath: folder + "/f\(index).bin"))
        }
        let expected = await Self.tree(local)
        for round in 0..<4 {
            let daemon = try start()
            let pause = UInt64.random(in: 150...900, using: &generator) * UInt64(round + 1)
            try await Task.sleep(for: .milliseconds(pause))
            await kill9(daemon)
        }
        try await expectConverged(expected)
    }
}

/// A flag a helper thread sets while the test waits for it.
final class Flag: @unchecked Sendable {
    var value = false
}
