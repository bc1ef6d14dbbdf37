import Foundation
import Replica
import SyncEngine
import SystemCalls
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Placeholders made by `LocalFolder.makePlaceholder` and filled by a `Hydrator` when
/// another process reads them, against the real kernel (root, Linux 6.14+, ext4/xfs/btrfs):
/// only the aligned ranges read are fetched, the mtime stays the remote's, a file the
/// hydrator does not know is never written, and a failed or slow fetch is an I/O error,
/// never zeros and never a hang.
@Suite struct HydratorTests {
    static let unavailable = PreContentGroupTests.unavailable
    static let alignment: Int64 = 64 * 1024
    /// Not a multiple of the alignment: the last range is clamped to the file.
    static let size: Int64 = 1_000_000
    static let modificationDate = Date(timeIntervalSince1970: 1_600_000_000.25)

    /// The remote file's bytes in `range`.
    static func bytes(_ range: Range<Int>) -> Data { Data(range.map(PreContentGroupTests.byte(at:))) }

    /// The remote: counts fetches, and fails, stalls or waits for a release as told.
    final class Remote: @unchecked Sendable {
        enum Behaviour { case serve, fail, stall, waitForRelease }
        private let lock = NSLock()
        private var calls: [ByteRange] = []
        private var released = false
        private var gone = false
        let behaviour: Behaviour

        init(_ behaviour: Behaviour = .serve) { self.behaviour = behaviour }

        var fetched: [ByteRange] { lock.withLock { calls } }
        func release() { lock.withLock { released = true } }
        /// The server replaces the version: every fetch from now on is refused (412).
        func replaceVersion() { lock.withLock { gone = true } }

        /// Writes the bytes of `range` into `file` at their offsets, as a store does.
        func fetch(_ range: ByteRange, into file: Int32) async throws(ProviderError) {
            let data = try await fetch(range)
            // A real store's transfer stops when its task is cancelled (a timed-out reader).
            guard !Task.isCancelled else { throw ProviderError(.cancelled, "the test fetch was given up") }
            let written = data.withUnsafeBytes { pwrite(file, $0.baseAddress, $0.count, off_t(range.offset)) }
            guard written == data.count else { throw ProviderError(.cannotSynchronize, "cannot write the test bytes") }
        }

        func fetch(_ range: ByteRange) async throws(ProviderError) -> Data {
            lock.withLock { calls.append(range) }
            if lock.withLock({ gone }) { throw ProviderError(.versionNoLongerAvailable, "the test server has another version") }
            switch behaviour {
            case .serve: break
            case .fail: throw ProviderError(.serverUnreachable, "the test server is down")
            case .stall: try? await Task.sleep(for: .seconds(120))
            case .waitForRelease:
                while !lock.withLock({ released }) { try? await Task.sleep(for: .milliseconds(10)) }
            }
            return HydratorTests.bytes(Int(range.offset)..<Int(range.end))
        }
    }

    /// What the hydrator reported, in order.
    final class Records: @unchecked Sendable {
        private let lock = NSLock()
        private var records: [HydrationRecord] = []
        var all: [HydrationRecord] { lock.withLock { records } }
        func append(_ record: HydrationRecord) { lock.withLock { records.append(record) } }
    }

    /// A folder, a started hydrator reporting into `records`, and a placeholder of the remote
    /// at `name` in it.
    struct Fixture {
        let folder: LocalFolder
        let hydrator: Hydrator
        let records: Records
        let remote: Remote

        init(_ remote: Remote = Remote(), timeout: Duration = .seconds(60), root: String = temporaryPath("tidesync-hydrator-")) throws {
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            folder = LocalFolder(root: root)
            let records = Records()
            self.records = records
            hydrator = try Hydrator(alignment: HydratorTests.alignment, timeout: timeout) { records.append($0) }
            self.remote = remote
            hydrator.start()
        }

        func makePlaceholder(_ name: String, replacing: LocalStat? = nil,
                             size: Int64 = HydratorTests.size) throws -> (path: RemotePath, stat: LocalStat) {
            let path = try RemotePath([name])
            let specification = LocalFolder.PlaceholderSpecification(
                item: ItemIdentifier(name), size: size, modificationDate: HydratorTests.modificationDate,
                version: ETag(value: "v1"))
            let remote = remote, absolute = folder.absolute(path)
            let stat = try folder.makePlaceholder(specification, at: path, replacing: replacing) { fd throws(ProviderError) in
                try hydrator.watch(fd, as: KnownPlaceholder(
                    item: specification.item, path: absolute, version: specification.version, size: specification.size) { range, file throws(ProviderError) in try await remote.fetch(range, into: file) })
            }
            return (path, stat)
        }

        func read(_ tool: String, _ arguments: [String]) async throws -> (status: Int32, data: Data, message: String) {
            let result = try await onOwnThread { try PreContentGroupTests.run(tool, arguments) }
            return (result.0, result.1, result.2)
        }

        func finish() {
            hydrator.stop()
            removeTree(folder.root)
        }
    }

    /// A read of a placeholder larger than its disk's free space (issue 15 item 3): the reader
    /// gets ENOSPC, the errno that says what to do, not EIO and never zeros; the ranges that
    /// did fit are recorded, the others are not, and the file stays a placeholder. The
    /// folder is a loop-mounted 8 MiB ext4 image (pre-content events need a real disk file
    /// system, not tmpfs).
    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"),
          .enabled(if: getuid() == 0, "needs root to loop-mount a small ext4 image"))
    func aReadThatMeetsAFullDiskGetsENOSPC() async throws {
        let scratch = temporaryPath("tidesync-hydrator-full-")
        let image = scratch + "/small.img", mountPoint = scratch + "/mnt"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        defer { removeTree(scratch) }
        #expect(FileManager.default.createFile(atPath: image, contents: nil) && truncate(image, 8 << 20) == 0)
        try #require(runTool("/sbin/mkfs.ext4", ["-q", "-F", image]) == 0, "mkfs.ext4 failed")
        try #require(runTool("/bin/mount", ["-o", "loop", image, mountPoint]) == 0, "cannot loop-mount \(image)")
        defer { if runTool("/bin/umount", [mountPoint]) != 0 { runTool("/bin/umount", ["-l", mountPoint]) } }
        let fixture = try Fixture(root: mountPoint + "/sync")
        defer { fixture.hydrator.stop() }
        let size: Int64 = 32 << 20
        let (path, made) = try fixture.makePlaceholder("big.bin", size: size)
        let absolute = fixture.folder.absolute(path)

        let read = try await fixture.read("/bin/cat", [absolute])
        #expect(read.status != 0, "cat read all \(size) bytes of a placeholder larger than the disk")
        #expect(read.message.contains("No space left on device"), "cat said: \(read.message)")
        let right = read.data == Self.bytes(0..<read.data.count)  // a Bool: see anAppendedPlaceholder…
        #expect(right, "cat read \(read.data.count) bytes, not the remote's (zeros?)")
        await fixture.hydrator.durable()
        let recorded = fixture.records.all.reduce(into: RangeSet()) { $0.insert($1.range) }
        #expect(recorded.byteCount > 0 && recorded.byteCount < size, "recorded \(recorded.byteCount) bytes of \(size)")
        let info = Self.info(absolute)
        let known = fixture.hydrator.placeholder(FileIdentity(device: UInt64(info.st_dev), inode: made.inode))
        #expect(known?.state == .partial, "the placeholder is \(known.map { "\($0.state)" } ?? "forgotten")")
    }

    static func info(_ path: String) -> stat {
        var info = stat()
        _ = lstat(path, &info)
        return info
    }

    static func changeTime(_ info: stat) -> Int64 { Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec) }

    /// `echo hi > placeholder`: the open truncates without an event, the write raises one.
    /// Filling that range would splice the old version's bytes after the user's; the file is
    /// the user's now, so nothing is fetched or written and it is no longer a placeholder.
    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func aPlaceholderAProgramTruncatesIsTheProgramsFile() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let (path, made) = try fixture.makePlaceholder("f.bin")
        let absolute = fixture.folder.absolute(path)
        let written = try await fixture.read("/bin/sh", ["-c", "echo hi > '\(absolute)'"])
        #expect(written.status == 0, "\(written.message)")
        #expect(readFile(absolute) == "hi\n", "the old version's bytes were written into the user's file")
        #expect(fixture.remote.fetched.isEmpty, "fetched \(fixture.remote.fetched)")
        let info = Self.info(absolute)
        #expect(fixture.hydrator.placeholder(FileIdentity(device: UInt64(info.st_dev), inode: made.inode)) == nil)
        let again = try await fixture.read("/bin/cat", [absolute])
        #expect(again.data == Data("hi\n".utf8) && fixture.remote.fetched.isEmpty)
    }

    /// `printf TAIL >> placeholder`: the file grows, but below its old end it is still the
    /// remote's version, with holes. They are filled when read (taking the file for the
    /// program's own, as for a truncation, would leave zeros there for readers and uploads).
    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func anAppendedPlaceholderStillReadsTheRemoteBytesBelowItsOldEnd() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let (path, _) = try fixture.makePlaceholder("grown.bin")
        let absolute = fixture.folder.absolute(path)
        let appended = try await fixture.read("/bin/sh", ["-c", "printf TAIL >> '\(absolute)'"])
        #expect(appended.status == 0, "\(appended.message)")
        let whole = try await fixture.read("/bin/cat", [absolute])
        #expect(whole.status == 0, "\(whole.message)")
        // A Bool: #expect on two large Data values diffs them on failure, for minutes.
        let right = whole.data == Self.bytes(0..<Int(Self.size)) + Data("TAIL".utf8)
        #expect(right, "cat read \(whole.data.count) bytes, not the remote's followed by TAIL")
        await fixture.hydrator.durable()  // a reader goes on before its bytes are recorded
        #expect(fixture.records.all.last?.state == .materialized)
    }

    /// `printf TAIL >> placeholder` (issue 15 item 6): the open for writing hydrates the whole
    /// file before it returns, so the program's bytes never land in a file with holes (the
    /// append's own event asks for the first page only, facts measured in `AccessIntent`).
    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func anOpenForWritingHydratesTheWholeFileFirst() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let (path, _) = try fixture.makePlaceholder("append.bin")
        let absolute = fixture.folder.absolute(path)
        let appended = try await fixture.read("/bin/sh", ["-c", "printf TAIL >> '\(absolute)'"])
        #expect(appended.status == 0, "\(appended.message)")
        #expect(RangeSet(fixture.remote.fetched).byteCount == Self.size, "fetched before the append: \(fixture.remote.fetched)")
        #expect(fixture.records.all.last?.state == .materialized)
        #expect(fixture.folder.placeholderAttribute(LocalFolder.PlaceholderAttribute.state, of: path) == "materialized")
        let right = (try? Data(contentsOf: URL(fileURLWithPath: absolute))) == Self.bytes(0..<Int(Self.size)) + Data("TAIL".utf8)
        #expect(right, "the file is not the remote's bytes followed by TAIL")
    }

    /// The version a partial placeholder belongs to is gone from the server: a write into a
    /// range already on disk would splice the program's bytes into a file whose other bytes
    /// exist nowhere any more. It is refused (EIO) before it changes anything.
    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func aWriteIntoAPlaceholderWhoseVersionIsGoneIsRefusedUnchanged() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let (path, _) = try fixture.makePlaceholder("gone.bin")
        let absolute = fixture.folder.absolute(path)
        let page = try await fixture.read("/bin/dd", ["if=\(absolute)", "bs=4096", "count=1", "status=none"])
        #expect(page.status == 0 && page.data == Self.bytes(0..<4096))
        fixture.remote.replaceVersion()
        let written = try await fixture.read("/bin/sh", ["-c", "printf EDIT | dd of='\(absolute)' conv=notrunc status=none"])
        #expect(written.status != 0 && written.message.contains("Input/output error"), "\(written.status) \(written.message)")
        let head = try await fixture.read("/bin/dd", ["if=\(absolute)", "bs=8", "count=1", "status=none"])
        #expect(head.data == Self.bytes(0..<8), "the refused write changed the file")
    }

    /// A program writes into a placeholder, then another range is read: the whole file was
    /// fetched (and recorded with the remote mtime) before the write went on, so the write's
    /// mtime is the last word and the scan sees the edit (a fill that restored the
    /// placeholder's original mtime after it would hide it and the edit would never be uploaded).
    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func aFillAfterAProgramsWriteKeepsTheMtimeThatWriteLeft() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let (path, made) = try fixture.makePlaceholder("edited.bin")
        let absolute = fixture.folder.absolute(path)
        let written = try await fixture.read("/bin/sh", ["-c", "printf EDIT | dd of='\(absolute)' conv=notrunc status=none"])
        #expect(written.status == 0, "\(written.message)")
        let edited = try #require(fixture.folder.entry(at: path)?.stat)
        #expect(edited.modificationTimeNanoseconds != made.modificationTimeNanoseconds, "the write did not move the mtime")
        let page = try await fixture.read("/bin/dd", ["if=\(absolute)", "bs=4096", "skip=100", "count=1", "status=none"])
        #expect(page.status == 0 && page.data == Self.bytes(409_600..<413_696))
        #expect(fixture.folder.entry(at: path)?.stat == edited, "the fill hid the program's edit by restoring the old mtime")
        let head = try await fixture.read("/bin/dd", ["if=\(absolute)", "bs=8", "count=1", "status=none"])
        #expect(head.data == Data("EDIT".utf8) + Self.bytes(4..<8))
        await fixture.hydrator.durable()
        #expect(fixture.records.all.last?.stat == made, "a hydration was recorded after the program's write")
    }

    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func aPlaceholderReadsAsTheRemoteBytesFetchingOnlyTheAlignedRangesRead() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let (path, made) = try fixture.makePlaceholder("f.bin")
        let absolute = fixture.folder.absolute(path)
        #expect(made.size == Self.size && made.modificationTimeNanoseconds == 1_600_000_000_250_000_000)
        #expect(fixture.folder.holdsNoData(path) == true, "a new placeholder holds data blocks")
        #expect(fixture.folder.placeholderAttribute(LocalFolder.PlaceholderAttribute.state, of: path) == "dataless")
        #expect(fixture.folder.placeholderAttribute(LocalFolder.PlaceholderAttribute.item, of: path) == "f.bin")
        // Not st_blocks == 0: on this ext4 the three xattrs overflow the inode into a block
        // of their own, counted in st_blocks (8); SEEK_DATA is what tells a placeholder.
        #expect(Self.info(absolute).st_blocks <= 8)

        let page = try await fixture.read("/bin/dd", ["if=\(absolute)", "bs=4096", "skip=10", "count=1", "status=none"])
        #expect(page.status == 0 && page.data == Self.bytes(40960..<45056), "the page read was not the remote's bytes")
        #expect(fixture.remote.fetched == [ByteRange(offset: 0, length: Self.alignment)])
        let last = try await fixture.read("/bin/dd", ["if=\(absolute)", "bs=1000", "skip=999", "count=1", "status=none"])
        #expect(last.status == 0 && last.data == Self.bytes(999_000..<1_000_000))
        let tail = ByteRange(offset: 15 * Self.alignment, length: Self.size - 15 * Self.alignment)
        #expect(fixture.remote.fetched == [ByteRange(offset: 0, length: Self.alignment), tail], "fetched \(fixture.remote.fetched)")

        // The daemon's writes keep the remote mtime, and each range is recorded with that stat.
        await fixture.hydrator.durable()
        let now = Self.info(absolute)
        #expect(Int64(now.st_mtim.tv_sec) * 1_000_000_000 + Int64(now.st_mtim.tv_nsec) == made.modificationTimeNanoseconds)
        #expect(fixture.records.all.map(\.range) == fixture.remote.fetched)
        #expect(fixture.records.all.allSatisfy { $0.stat == made && $0.state == .partial })
        #expect(fixture.folder.holdsNoData(path) == false)
        #expect(fixture.folder.placeholderAttribute(LocalFolder.PlaceholderAttribute.state, of: path) == "partial")
    }

    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func aFullyReadFileIsMaterializedAndUnmarked() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let (path, made) = try fixture.makePlaceholder("whole.bin")
        let absolute = fixture.folder.absolute(path)
        let whole = try await fixture.read("/bin/cat", [absolute])
        #expect(whole.status == 0 && whole.data == Self.bytes(0..<Int(Self.size)), "cat read zeros or other bytes")
        #expect(RangeSet(fixture.remote.fetched).byteCount == Self.size)
        #expect(fixture.remote.fetched.map(\.length).reduce(0, +) == Self.size, "a range was fetched twice")
        await fixture.hydrator.durable()
        #expect(fixture.records.all.last?.state == .materialized)
        #expect(fixture.records.all.last?.stat == made)
        #expect(fixture.folder.placeholderAttribute(LocalFolder.PlaceholderAttribute.state, of: path) == "materialized")
        let identity = FileIdentity(device: UInt64(Self.info(absolute).st_dev), inode: made.inode)
        #expect(fixture.hydrator.placeholder(identity) == nil, "a whole file is still registered")

        let seen = fixture.hydrator.eventsSeen
        let again = try await fixture.read("/bin/cat", [absolute])
        #expect(again.status == 0 && again.data == whole.data)
        #expect(fixture.hydrator.eventsSeen == seen, "a read of a materialized file still raised events")
    }

    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func aMarkedFileThatIsNotAPlaceholderIsReadUnchangedAndNeverWritten() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let absolute = fixture.folder.root + "/mine.txt"
        let content = Data("the user's own words, never to be overwritten\n".utf8)
        try content.write(to: URL(fileURLWithPath: absolute))
        // A sparse file of the user's too: a handler that filled it would give it data blocks.
        let sparse = fixture.folder.root + "/sparse.bin"
        try #require(FileManager.default.createFile(atPath: sparse, contents: nil) && truncate(sparse, 1 << 20) == 0)
        for file in [absolute, sparse] {
            let fd = open(file, O_RDONLY)
            try #require(fd >= 0)
            try fixture.hydrator.group.mark(fd, for: .preAccess)
            close(fd)
        }
        let before = (Self.info(absolute), Self.info(sparse))

        let read = try await fixture.read("/bin/cat", [absolute])
        #expect(read.status == 0 && read.data == content)
        let zeros = try await fixture.read("/bin/cat", [sparse])
        #expect(zeros.status == 0 && zeros.data == Data(count: 1 << 20))
        #expect(fixture.hydrator.eventsSeen >= 2, "the reads raised no events: the test proves nothing")
        let after = (Self.info(absolute), Self.info(sparse))
        // A write, even of the same bytes, would move the ctime.
        #expect(Self.changeTime(after.0) == Self.changeTime(before.0), "an unknown file was written")
        #expect(after.1.st_blocks == 0 && Self.changeTime(after.1) == Self.changeTime(before.1), "an unknown sparse file was filled")
        #expect(fixture.remote.fetched.isEmpty && fixture.records.all.isEmpty)
    }

    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func aFailedFetchIsAnIOErrorAndTheFileStaysDataless() async throws {
        let fixture = try Fixture(Remote(.fail))
        defer { fixture.finish() }
        let (path, _) = try fixture.makePlaceholder("down.bin")
        let read = try await fixture.read("/bin/cat", [fixture.folder.absolute(path)])
        #expect(read.status != 0)
        #expect(read.data.isEmpty, "cat got \(read.data.count) bytes of a file whose fetch failed")
        #expect(read.message.contains("Input/output error"), "cat said: \(read.message)")
        #expect(fixture.folder.holdsNoData(path) == true)
        #expect(fixture.folder.placeholderAttribute(LocalFolder.PlaceholderAttribute.state, of: path) == "dataless")
        #expect(fixture.records.all.isEmpty)
    }

    /// A run of the suite (hundreds of tests ready at once on Swift's two shared threads)
    /// kept the 1 s deadline of the test above from firing for over a minute: the hydrator's
    /// tasks waited their turn behind everything else. Here sixteen tasks keep those threads
    /// busy a second at a time while a reader waits on a stalled fetch: each step of the
    /// hydrator's waits about 8 s for its turn there, while on its own threads the reader is
    /// answered after about 1 s (under 4 s in a loaded run of the whole suite).
    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func theDeadlineHoldsWhileSwiftsSharedThreadsAreBusy() async throws {
        let fixture = try Fixture(Remote(.stall), timeout: .seconds(1))
        defer { fixture.finish() }
        let (path, _) = try fixture.makePlaceholder("busy.bin")
        let done = Flag()
        let busy = (0..<16).map { _ in
            Task.detached {
                while !done.isSet {
                    let end = ContinuousClock.now + .seconds(1)
                    while ContinuousClock.now < end, !done.isSet {}
                    await Task.yield()
                }
            }
        }
        // Timed on the reader's own thread: this test's task waits its turn behind the busy ones.
        let arguments = ["if=\(fixture.folder.absolute(path))", "bs=4096", "count=1", "status=none"]
        let (read, waited) = try await onOwnThread { () throws -> ((Int32, Data, String), Duration) in
            let started = ContinuousClock.now
            let read = try PreContentGroupTests.run("/bin/dd", arguments)
            // Set here, not once this test's task has its turn again: that wait would keep
            // Swift's shared threads busy, for the rest of the suite too.
            done.set()
            return (read, ContinuousClock.now - started)
        }
        for task in busy { await task.value }
        #expect(read.0 != 0 && read.2.contains("Input/output error"), "dd said: \(read.2)")
        #expect(waited < .seconds(8), "the reader waited \(waited) for a 1 s deadline")
    }

    final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        var isSet: Bool { lock.withLock { value } }
        func set() { lock.withLock { value = true } }
    }

    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func aFetchLongerThanTheTimeoutIsAnIOErrorNotAHang() async throws {
        let fixture = try Fixture(Remote(.stall), timeout: .seconds(1))
        defer { fixture.finish() }
        let (path, _) = try fixture.makePlaceholder("slow.bin")
        let started = ContinuousClock.now
        let read = try await fixture.read("/bin/dd", ["if=\(fixture.folder.absolute(path))", "bs=4096", "count=1", "status=none"])
        let waited = ContinuousClock.now - started
        #expect(read.status != 0 && read.data.isEmpty)
        #expect(read.message.contains("Input/output error"), "dd said: \(read.message)")
        // The stalled fetch takes 120 s: a reader released well before that was released
        // by the timeout (the bound is loose for a loaded machine).
        #expect(waited >= .seconds(1) && waited < .seconds(60), "the reader waited \(waited)")
        #expect(fixture.folder.holdsNoData(path) == true)
    }

    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func twoReadersOfOneRangeShareOneFetch() async throws {
        let fixture = try Fixture(Remote(.waitForRelease))
        defer { fixture.finish() }
        let (path, _) = try fixture.makePlaceholder("shared.bin")
        let arguments = ["if=\(fixture.folder.absolute(path))", "bs=4096", "skip=3", "count=1", "status=none"]
        async let first = fixture.read("/bin/dd", arguments)
        async let second = fixture.read("/bin/dd", arguments)
        try await eventually("both readers' events") { fixture.hydrator.eventsSeen >= 2 }
        try await eventually("the fetch") { !fixture.remote.fetched.isEmpty }
        fixture.remote.release()
        let (one, two) = try await (first, second)
        #expect(one.status == 0 && one.data == Self.bytes(12288..<16384))
        #expect(two.status == 0 && two.data == one.data)
        #expect(fixture.remote.fetched == [ByteRange(offset: 0, length: Self.alignment)], "fetched \(fixture.remote.fetched)")
    }

    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func aPlaceholderReplacesTheFileThePlanSaw() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let absolute = fixture.folder.root + "/old.bin"
        try Data("the version before\n".utf8).write(to: URL(fileURLWithPath: absolute))
        let seen = try #require(fixture.folder.entry(at: RemotePath(["old.bin"]))?.stat)
        let (path, made) = try fixture.makePlaceholder("old.bin", replacing: seen)
        #expect(made.inode != seen.inode && made.size == Self.size)
        #expect(fixture.folder.holdsNoData(path) == true)
        let page = try await fixture.read("/bin/dd", ["if=\(absolute)", "bs=4096", "skip=100", "count=1", "status=none"])
        #expect(page.status == 0 && page.data == Self.bytes(409_600..<413_696))
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.folder.root) == ["old.bin"])
    }

    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"))
    func aPlaceholderOverAFileThePlanDidNotSeeIsRefused() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let absolute = fixture.folder.root + "/taken.txt"
        try Data("written by the user meanwhile\n".utf8).write(to: URL(fileURLWithPath: absolute))
        let before = Self.info(absolute)
        await expectCode(.versionMismatch) { _ = try fixture.makePlaceholder("taken.txt") }
        // Replacing a file the plan saw with another stat is refused too.
        let stale = LocalStat(inode: UInt64(before.st_ino), size: 1, modificationTimeNanoseconds: 0)
        let specification = LocalFolder.PlaceholderSpecification(item: ItemIdentifier("t"), size: 10, modificationDate: Self.modificationDate, version: nil)
        await expectCode(.versionMismatch) {
            _ = try fixture.folder.makePlaceholder(specification, at: RemotePath(["taken.txt"]), replacing: stale) { _ throws(ProviderError) in }
        }
        #expect(readFile(absolute) == "written by the user meanwhile\n")
        let after = Self.info(absolute)
        #expect(after.st_ino == before.st_ino && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.folder.root) == ["taken.txt"], "a temporary was left behind")
    }
}
