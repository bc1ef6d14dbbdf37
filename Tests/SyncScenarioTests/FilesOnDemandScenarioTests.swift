import Foundation
import Logging
import Replica
import SyncEngine
import SystemCalls
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Issue 15: the fanotify placeholder port in real passes against every store, with the
/// real kernel (root, Linux 6.14+, ext4/xfs/btrfs below the temporary folder). Files are
/// read by child processes only: this test process runs the hydrator, whose own reads are
/// let through unfilled.
@Suite("Scenario: files on demand")
struct FilesOnDemandScenarioTests {
    static let alignment: Int64 = 64 * 1024
    /// Above the policy's minimum, not a multiple of the alignment.
    static let size = 1_048_576 + 123

    static let unavailable: String? = {
        guard getuid() == 0 else { return "needs root (CAP_SYS_ADMIN) for a fanotify pre-content group" }
        do throws(PreContentGroup.Failure) {
            let group = try PreContentGroup()
            let path = NSTemporaryDirectory() + "tidesync-fod-probe-\(UUID().uuidString)"
            let fd = open(path, O_CREAT | O_RDWR, 0o600)
            defer { close(fd); unlink(path) }
            try group.mark(fd, for: .preAccess)
            return nil
        } catch {
            return "\(error.description) (the temporary folder \(NSTemporaryDirectory()))"
        }
    }()

    /// The bytes of version `version` of the test file.
    static func content(_ version: Int) -> Data {
        Data((0..<size).map { UInt8(truncatingIfNeeded: ($0 &* 7 &+ version &* 101) % 251) })
    }

    /// A pass whose runner brings files down through a started fanotify port.
    struct OnDemand {
        let port: FanotifyPlaceholders
        let pass: SyncPass

        init(_ world: SyncWorld, timeout: Duration = .seconds(20)) throws {
            var logger = Logger(label: "scenario-on-demand")
            logger.logLevel = .warning
            let provider = SyncProvider(store: world.store, state: world.database)
            let folder = LocalFolder(root: world.localRoot)
            port = try FanotifyPlaceholders(folder: folder, policy: PlaceholderPolicy(mode: .auto, minimumSize: 64 * 1024),
                                            provider: provider, alignment: FilesOnDemandScenarioTests.alignment,
                                            timeout: timeout, logger: logger)
            port.start()
            let runner = PlanRunner(provider: provider, folder: folder, transfers: 4, logger: logger, placeholders: port)
            pass = SyncPass(runner: runner, scanner: LocalScanner(root: world.localRoot, exclude: ExcludeList(patterns: ExcludeList.defaultPatterns)),
                            host: "testhost", logger: logger)
        }
    }

    static func putOnServer(_ world: SyncWorld, _ name: String, _ data: Data) throws {
        try world.writeOnServer(name, data: data)
    }

    /// `dd` of `count` blocks of 4 KiB from block `skip` of `file`, by a child process;
    /// returns its status, the bytes and what it said.
    static func read(_ file: String, skip: Int, count: Int) async throws -> (status: Int32, data: Data, message: String) {
        let out = temporaryPath("tidesync-fod-read-")
        defer { unlink(out) }
        let result = try await Binary.run("/bin/dd", ["if=\(file)", "of=\(out)", "bs=4096", "skip=\(skip)", "count=\(count)", "status=none"],
                                          environment: nil)
        return (result.status, (try? Data(contentsOf: URL(fileURLWithPath: out))) ?? Data(), result.errors)
    }

    /// Where `data` first differs from `expected`; nil when they are equal. (`#expect(a == b)`
    /// on two large `Data` values computes their difference on failure, for minutes.)
    static func difference(_ data: Data, _ expected: Data) -> String? {
        guard data != expected else { return nil }
        let first = zip(data, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(data.count, expected.count)
        return "\(data.count) bytes instead of \(expected.count), first difference at offset \(first)"
    }

    static func record(_ world: SyncWorld, _ name: String) throws -> ItemRecord? {
        try world.database.allItems().first { $0.name == name }
    }

    @Test("a large remote file comes down dataless, reads as the remote's bytes by aligned ranges, and the state DB follows",
          .enabled(if: unavailable == nil, "\(unavailable ?? "")"), arguments: Remote.withOtherServers)
    func placeholderReadByRange(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            let onDemand = try OnDemand(world)
            defer { onDemand.port.stop() }
            try Self.putOnServer(world, "big.bin", Self.content(1))
            try world.writeOnServer("small.txt", "small")
            try await RemoteSafetyScenarioTests.run(onDemand.pass)
            let folder = LocalFolder(root: world.localRoot)
            let big = try RemotePath(["big.bin"])
            #expect(folder.entry(at: big)?.stat.size == Int64(Self.size))
            #expect(folder.holdsNoData(big) == true, "the large file came down with data")
            #expect(folder.placeholderAttribute(LocalFolder.PlaceholderAttribute.state, of: big) == "dataless")
            #expect(try Self.record(world, "big.bin")?.materialization == .dataless)
            #expect(readFile(world.local("small.txt")) == "small")
            #expect(try Self.record(world, "small.txt")?.materialization == .materialized)

            let page = try await Self.read(world.local("big.bin"), skip: 40, count: 2)
            #expect(page.status == 0, "\(page.message)")
            #expect(Self.difference(page.data, Self.content(1)[163_840..<172_032]) == nil)
            await onDemand.port.durable()  // the reader went on before its range was recorded
            let id = try #require(try Self.record(world, "big.bin")?.id)
            #expect(try world.database.hydratedRanges(of: id).ranges == RangeSet([ByteRange(offset: 131_072, length: 65_536)]))
            #expect(try Self.record(world, "big.bin")?.materialization == .partial)
            #expect(try await onDemand.pass.run().steps == 0, "a read placeholder looked changed")

            let whole = try await Self.read(world.local("big.bin"), skip: 0, count: 1000)
            #expect(whole.status == 0, "\(whole.message)")
            #expect(Self.difference(whole.data, Self.content(1)) == nil)
            await onDemand.port.durable()
            #expect(try Self.record(world, "big.bin")?.materialization == .materialized)
            #expect(try world.database.hydratedRanges(of: id).ranges == RangeSet())
            #expect(try await onDemand.pass.run().steps == 0)
            // Whole and unmarked now: this process's own read sees the bytes too.
            #expect(Self.difference(try Data(contentsOf: URL(fileURLWithPath: world.local("big.bin"))), Self.content(1)) == nil)
            #expect(try world.database.pendingOperations().isEmpty)
        }
    }

    @Test("a remote change between two reads is an I/O error; the next pass brings the new version down dataless",
          .enabled(if: unavailable == nil, "\(unavailable ?? "")"), arguments: Remote.withOtherServers)
    func remoteChangeBetweenReads(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            let onDemand = try OnDemand(world)
            defer { onDemand.port.stop() }
            try Self.putOnServer(world, "big.bin", Self.content(1))
            try await RemoteSafetyScenarioTests.run(onDemand.pass)
            let first = try await Self.read(world.local("big.bin"), skip: 0, count: 1)
            #expect(first.status == 0 && Self.difference(first.data, Self.content(1)[0..<4096]) == nil)
            let before = try #require(try Self.record(world, "big.bin"))

            // A version of the same size in the same second is no new version at all where
            // versions are seconds and size (nginx, WsgiDAV; README): made in a later second.
            if remote.versionsAreSecondsAndSize { try await world.waitPastServerSecond("big.bin") }
            try Self.putOnServer(world, "big.bin", Self.content(2))
            let stale = try await Self.read(world.local("big.bin"), skip: 128, count: 1)
            #expect(stale.status != 0 && stale.data.isEmpty, "a read mixed two versions")
            #expect(stale.message.contains("Input/output error"), "dd said: \(stale.message)")

            try await RemoteSafetyScenarioTests.run(onDemand.pass)
            let after = try #require(try Self.record(world, "big.bin"))
            #expect(after.id == before.id && after.remoteETag != before.remoteETag)
            #expect(after.materialization == .dataless)
            #expect(LocalFolder(root: world.localRoot).holdsNoData(try RemotePath(["big.bin"])) == true)
            let fresh = try await Self.read(world.local("big.bin"), skip: 128, count: 1)
            #expect(fresh.status == 0, "\(fresh.message)")
            #expect(Self.difference(fresh.data, Self.content(2)[524_288..<528_384]) == nil)
        }
    }

    @Test("an edited placeholder is uploaded with the remote's bytes wherever it was not written, never zeros",
          .enabled(if: unavailable == nil, "\(unavailable ?? "")"), arguments: Remote.withOtherServers)
    func editedPlaceholderIsUploadedWhole(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            let onDemand = try OnDemand(world)
            defer { onDemand.port.stop() }
            try Self.putOnServer(world, "big.bin", Self.content(1))
            try await RemoteSafetyScenarioTests.run(onDemand.pass)
            let edit = try await Binary.run("/bin/sh", ["-c", "printf EDIT | dd of='\(world.local("big.bin"))' conv=notrunc status=none"],
                                            environment: nil)
            #expect(edit.status == 0, "\(edit.errors)")
            try await RemoteSafetyScenarioTests.run(onDemand.pass)
            var expected = Self.content(1)
            expected.replaceSubrange(0..<4, with: Data("EDIT".utf8))
            let uploaded = try Data(contentsOf: URL(fileURLWithPath: world.onServer("big.bin")))
            #expect(Self.difference(uploaded, expected) == nil, "the upload held zeros or other bytes where the placeholder was never read")
            #expect(try Self.record(world, "big.bin")?.materialization == .materialized)
        }
    }

    @Test("with files on demand off, the placeholders recorded earlier are downloaded whole",
          .enabled(if: unavailable == nil, "\(unavailable ?? "")"), arguments: Remote.withOtherServers)
    func switchedOffDownloadsEveryPlaceholder(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            let onDemand = try OnDemand(world)
            try Self.putOnServer(world, "big.bin", Self.content(1))
            try await RemoteSafetyScenarioTests.run(onDemand.pass)
            onDemand.port.stop()
            let provider = SyncProvider(store: world.store, state: world.database)
            let recorded = try provider.recordedPlaceholders()
            #expect(recorded.map(\.path) == [try RemotePath(["big.bin"])])
            var logger = Logger(label: "scenario-off")
            logger.logLevel = .warning
            let done = await PlaceholdersOff(folder: LocalFolder(root: world.localRoot)).downloadWhole(recorded, provider: provider, logger: logger)
            #expect(done == 1)
            #expect(Self.difference(try Data(contentsOf: URL(fileURLWithPath: world.local("big.bin"))), Self.content(1)) == nil)
            #expect(try Self.record(world, "big.bin")?.materialization == .materialized)
            #expect(try provider.recordedPlaceholders().isEmpty)
            #expect(try await onDemand.pass.run().steps == 0)
        }
    }

    @Test("an upload and a look at an ordinary file never open it for writing, so the watcher sees no change",
          .enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func ordinaryFilesAreNotOpenedForWriting() async throws {
        try await withWorld(.localDirectory) { world in
            let onDemand = try OnDemand(world)
            defer { onDemand.port.stop() }
            try writeFile(world.local("doc.txt"), "mine")
            // Closed here, but a child another test spawned just then may hold a copy of the
            // descriptor until it runs exec (a loaded machine: tens of milliseconds); the
            // last close, and its IN_CLOSE_WRITE, would come after the watch below.
            let folder = LocalFolder(root: world.localRoot)
            try await eventually("no process holds doc.txt open for writing") { !folder.isOpenForWriting(try RemotePath(["doc.txt"])) }
            // IN_NONBLOCK | IN_CLOEXEC; IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE: what the watcher takes as a change.
            let watch = inotify_init1(O_NONBLOCK | O_CLOEXEC)
            try #require(watch >= 0)
            defer { close(watch) }
            try #require(inotify_add_watch(watch, world.localRoot, 0x2 | 0x4 | 0x8) >= 0)
            try await RemoteSafetyScenarioTests.run(onDemand.pass)
            #expect(readFile(world.onServer("doc.txt")) == "mine")
            #expect(try onDemand.port.state(of: RemotePath(["doc.txt"])) == .materialized)
            // Events are queued when the file is closed, so every one is here by now.
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = Glibc.read(watch, &buffer, buffer.count)
            let names = count > 16 ? String(decoding: buffer[16..<count].filter { $0 >= 0x20 }, as: UTF8.self) : ""
            let mask = count >= 8 ? buffer[4..<8].reversed().reduce(0) { $0 << 8 | UInt32($1) } : 0
            #expect(count < 0 && errno == EAGAIN, "tidesync's own opens read as changes: \(count) bytes of events (\(names), first mask 0x\(String(mask, radix: 16)))")
        }
    }
}
