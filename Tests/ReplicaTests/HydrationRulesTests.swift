import Foundation
import Replica
import SyncEngine
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Who may hydrate (issue 15 items 4 and 5), against the real kernel and real programs:
/// a hole-skipping copier (`cp`, `tar --sparse`) reads no hole, so without `hydrate_on_open`
/// its copy of a placeholder is zeros; with it the open hydrates the whole file first. A
/// program in `deny_hydration` gets EPERM for bytes a placeholder lacks, and nothing is
/// fetched.
@Suite struct HydrationRulesTests {
    static let unavailable = PreContentGroupTests.unavailable
    static let size = Int(HydratorTests.size)

    struct Fixture {
        let folder: LocalFolder
        let hydrator: Hydrator
        let remote: HydratorTests.Remote
        let scratch: String

        init(_ rules: HydrationRules, remote: HydratorTests.Remote = HydratorTests.Remote(), timeout: Duration = .seconds(60)) throws {
            let root = temporaryPath("tidesync-rules-")
            scratch = temporaryPath("tidesync-rules-out-")
            for path in [root, scratch] { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
            folder = LocalFolder(root: root)
            hydrator = try Hydrator(alignment: HydratorTests.alignment, timeout: timeout, rules: rules) { _ in }
            self.remote = remote
            hydrator.start()
        }

        func makePlaceholder(_ name: String) throws -> String {
            let path = try RemotePath([name])
            let specification = LocalFolder.PlaceholderSpecification(
                item: ItemIdentifier(name), size: HydratorTests.size, modificationDate: HydratorTests.modificationDate,
                version: ETag(value: "v1"))
            let remote = remote, absolute = folder.absolute(path)
            _ = try folder.makePlaceholder(specification, at: path, replacing: nil) { fd throws(ProviderError) in
                try hydrator.watch(fd, as: KnownPlaceholder(item: specification.item, path: absolute, version: specification.version,
                                                            size: specification.size) { range, file throws(ProviderError) in
                    try await remote.fetch(range, into: file)
                })
            }
            return absolute
        }

        func run(_ tool: String, _ arguments: [String]) async throws -> (status: Int32, data: Data, message: String) {
            let result = try await onOwnThread { try PreContentGroupTests.run(tool, arguments) }
            return (result.0, result.1, result.2)
        }

        func contents(_ path: String) -> Data { (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data() }

        func finish() {
            hydrator.stop()
            removeTree(folder.root)
            removeTree(scratch)
        }
    }

    static var whole: Data { HydratorTests.bytes(0..<size) }

    /// The hazard itself: `cp` seeks past the holes (SEEK_DATA), reads nothing, raises no
    /// read event, and its copy is all zeros. With `cp` in `hydrate_on_open` its open
    /// hydrates the file whole first.
    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"), arguments: [false, true])
    func cpCopiesTheRightBytesOnlyWhenItsOpenHydrates(hydrateOnOpen: Bool) async throws {
        let fixture = try Fixture(HydrationRules(hydrateOnOpen: hydrateOnOpen ? ["cp"] : []))
        defer { fixture.finish() }
        let placeholder = try fixture.makePlaceholder("movie.bin")
        let copy = fixture.scratch + "/copy.bin"
        let copied = try await fixture.run("/bin/cp", [placeholder, copy])
        #expect(copied.status == 0, "\(copied.message)")
        if hydrateOnOpen {
            #expect(fixture.contents(copy) == Self.whole, "cp's copy is not the file's bytes")
            let entry = try #require(fixture.hydrator.recentHydrations.last)
            #expect(entry.program == "cp" && entry.bytes == HydratorTests.size && entry.path == placeholder, "\(entry)")
        } else {
            #expect(fixture.contents(copy) == Data(count: Self.size), "cp read the holes: the hazard this guards is gone")
            #expect(fixture.remote.fetched.isEmpty)
        }
    }

    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func tarSparseArchivesTheRightBytes() async throws {
        let fixture = try Fixture(HydrationRules(hydrateOnOpen: PlaceholderDefaults.hydrateOnOpen))
        defer { fixture.finish() }
        _ = try fixture.makePlaceholder("disk.img")
        let archive = fixture.scratch + "/a.tar"
        let packed = try await fixture.run("/bin/tar", ["--sparse", "-cf", archive, "-C", fixture.folder.root, "disk.img"])
        #expect(packed.status == 0, "\(packed.message)")
        let unpacked = try await fixture.run("/bin/tar", ["-xf", archive, "-C", fixture.scratch])
        #expect(unpacked.status == 0, "\(unpacked.message)")
        #expect(fixture.contents(fixture.scratch + "/disk.img") == Self.whole, "tar --sparse archived zeros")
    }

    /// A slow server: the open fails with EIO within the timeout, it never hangs and never
    /// lets the copier on to copy zeros.
    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func anOpenThatCannotHydrateInTimeFailsWithEIO() async throws {
        let fixture = try Fixture(HydrationRules(hydrateOnOpen: ["cp"]), remote: HydratorTests.Remote(.stall), timeout: .seconds(1))
        defer { fixture.finish() }
        let placeholder = try fixture.makePlaceholder("slow.bin")
        let copied = try await fixture.run("/bin/cp", [placeholder, fixture.scratch + "/copy.bin"])
        #expect(copied.status != 0 && copied.message.contains("Input/output error"), "cp: \(copied.status) \(copied.message)")
        #expect(!FileManager.default.fileExists(atPath: fixture.scratch + "/copy.bin") || fixture.contents(fixture.scratch + "/copy.bin").isEmpty)
    }

    /// An indexer (here `dd` under the name the kernel gives tracker-extract-3) reading a
    /// dataless range gets EPERM and fetches nothing; bytes already here read as usual.
    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func aProgramOfDenyHydrationGetsEPERMAndFetchesNothing() async throws {
        let fixture = try Fixture(HydrationRules(hydrateOnOpen: ["cp"], denyHydration: ["tracker-extract"]))
        defer { fixture.finish() }
        let placeholder = try fixture.makePlaceholder("photo.raw")
        let indexer = fixture.scratch + "/tracker-extract"
        try #require(copyProgram("/bin/dd", indexer))
        let refused = try await fixture.run(indexer, ["if=\(placeholder)", "bs=4096", "count=1", "status=none"])
        #expect(refused.status != 0 && refused.message.contains("Operation not permitted"), "\(refused.status) \(refused.message)")
        #expect(refused.data.isEmpty)
        #expect(fixture.remote.fetched.isEmpty, "an indexer fetched \(fixture.remote.fetched)")
        #expect(fixture.hydrator.recentHydrations.isEmpty)

        let read = try await fixture.run("/bin/dd", ["if=\(placeholder)", "bs=4096", "count=1", "status=none"])
        #expect(read.status == 0 && read.data == HydratorTests.bytes(0..<4096), "\(read.message)")
        let again = try await fixture.run(indexer, ["if=\(placeholder)", "bs=4096", "count=1", "status=none"])
        #expect(again.status == 0 && again.data == HydratorTests.bytes(0..<4096), "bytes already here: \(again.message)")
        #expect(fixture.remote.fetched.count == 1)
        #expect(fixture.hydrator.recentHydrations.map(\.program) == ["dd"])
    }

    /// A stopped hydrator closes its group: no later open or read of a placeholder (this
    /// process's own, or a program's) waits on a loop nobody runs. (Without a group the
    /// holes read as zeros: a clean stop locks placeholders first, see `PlaceholderLock`.)
    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func nothingWaitsOnAStoppedHydrator() async throws {
        let fixture = try Fixture(HydrationRules(hydrateOnOpen: ["cp"]))
        defer { fixture.finish() }
        let placeholder = try fixture.makePlaceholder("late.bin")
        fixture.hydrator.stop()
        let copied = try await fixture.run("/usr/bin/timeout", ["-s", "KILL", "20", "/bin/cp", placeholder, fixture.scratch + "/late.bin"])
        #expect(copied.status == 0, "cp after the stop: \(copied.status) \(copied.message)")
        let read = try await fixture.run("/usr/bin/timeout", ["-s", "KILL", "20", "/bin/dd", "if=\(placeholder)", "count=1", "status=none"])
        #expect(read.status == 0, "dd after the stop: \(read.status) \(read.message)")
    }

    func copyProgram(_ from: String, _ to: String) -> Bool {
        (try? FileManager.default.copyItem(atPath: from, toPath: to)) != nil && chmod(to, 0o755) == 0
    }
}

/// The `hydrate_on_open` default of the config, as the daemon passes it.
enum PlaceholderDefaults {
    static let hydrateOnOpen = ["cp", "mv", "tar", "bsdtar", "install", "rsync"]
}
