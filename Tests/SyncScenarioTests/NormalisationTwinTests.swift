import Foundation
import Replica
import StateDatabase
import SyncEngine
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Issue 13 item 5: names that differ only in Unicode normalisation (NFC `café` and NFD
/// `café`) are two files on the server and on Linux. The server's names are not ours: both
/// are kept byte for byte on both sides, nothing is moved or renamed on the server, and the
/// pass lists the pair so `status` can warn about it.
@Suite("Unicode normalisation twins", .serialized)
struct NormalisationTwinTests {
    static let nfc = "caf\u{00E9}.txt", nfd = "cafe\u{0301}.txt"

    @Test("two server names that differ only in normalisation: both downloaded byte-exact, the server untouched, the pair listed",
          arguments: Remote.withOtherServers)
    func bothKept(_ remote: Remote) async throws {
        let world = try await SyncWorld(remote)
        defer { Task { await world.close() } }
        try world.writeOnServer(Self.nfc, "composed")
        try world.writeOnServer(Self.nfd, "decomposed")
        let mark = world.accessLogLines().count
        let results = try await world.sync()
        try await world.accessLogSettled()
        for root in [world.localRoot, world.remoteDisk] {
            #expect(Set(SyncWorld.names(in: root)) == [Array(Self.nfc.utf8), Array(Self.nfd.utf8)],
                    "names in \(root): \(SyncWorld.names(in: root).map { String(decoding: $0, as: UTF8.self) })")
        }
        #expect(Self.bytes(world.local(Self.nfc)) == "composed" && Self.bytes(world.local(Self.nfd)) == "decomposed")
        #expect(Self.bytes(world.onServer(Self.nfc)) == "composed" && Self.bytes(world.onServer(Self.nfd)) == "decomposed")
        #expect(world.requests("MOVE", since: mark).isEmpty, "moved on the server: \(world.requests("MOVE", since: mark))")
        // The one-time probe of what the server guarantees writes a scratch file of its own.
        let writes = ["PUT", "DELETE", "PROPPATCH"].flatMap { world.requests($0, since: mark) }.filter { !$0.contains(".tidesync-tmp-probe") }
        #expect(writes.isEmpty, "written on the server: \(writes)")
        let twins = results.first?.normalisationTwins ?? []
        #expect(twins.count == 1 && Set(twins.first?.map { Array($0.name.utf8) } ?? []) == [Array(Self.nfc.utf8), Array(Self.nfd.utf8)],
                "twins listed: \(twins)")
        // A pass with nothing to do still lists them: status shows what is, not what changed.
        let quiet = try await world.pass.run()
        #expect(quiet.steps == 0 && quiet.normalisationTwins.count == 1)
    }

    @Test("an edit of either twin reaches its own server item, and a server edit its own local file",
          arguments: Remote.withOtherServers)
    func editsGoToTheirTwin(_ remote: Remote) async throws {
        let world = try await SyncWorld(remote)
        defer { Task { await world.close() } }
        try world.writeOnServer(Self.nfc, "composed")
        try world.writeOnServer(Self.nfd, "decomposed")
        try await world.sync()
        let mark = world.accessLogLines().count
        try Self.write(world.local(Self.nfd), "decomposed, edited here")
        try await world.sync()
        #expect(Self.bytes(world.onServer(Self.nfd)) == "decomposed, edited here")
        #expect(Self.bytes(world.onServer(Self.nfc)) == "composed")
        try Self.write(world.local(Self.nfc), "composed, edited here too")
        try await world.sync()
        #expect(Self.bytes(world.onServer(Self.nfc)) == "composed, edited here too")
        #expect(Self.bytes(world.onServer(Self.nfd)) == "decomposed, edited here")
        if remote == .rclone {
            // rclone sees its disk through a listing cache: another client writes through it.
            try world.writeOnServer(Self.nfd, "decomposed, edited on the server")
        } else {
            try Self.write(world.onServer(Self.nfd), "decomposed, edited on the server")
            world.giveToServer(Self.nfd)
        }
        try await world.sync()
        #expect(Self.bytes(world.local(Self.nfd)) == "decomposed, edited on the server")
        #expect(Self.bytes(world.local(Self.nfc)) == "composed, edited here too")
        try await world.accessLogSettled()
        #expect(world.requests("MOVE", since: mark).isEmpty, "moved on the server: \(world.requests("MOVE", since: mark))")
        for root in [world.localRoot, world.remoteDisk] {
            #expect(Set(SyncWorld.names(in: root)) == [Array(Self.nfc.utf8), Array(Self.nfd.utf8)])
        }
    }

    @Test("a new local twin beside a synced file is uploaded under its own name; nothing is renamed",
          arguments: Remote.withOtherServers)
    func newLocalTwinUploads(_ remote: Remote) async throws {
        let world = try await SyncWorld(remote)
        defer { Task { await world.close() } }
        try Self.write(world.local(Self.nfc), "ours, synced")
        try await world.sync()
        let mark = world.accessLogLines().count
        try Self.write(world.local(Self.nfd), "the other form, new here")
        let results = try await world.sync()
        try await world.accessLogSettled()
        for root in [world.localRoot, world.remoteDisk] {
            #expect(Set(SyncWorld.names(in: root)) == [Array(Self.nfc.utf8), Array(Self.nfd.utf8)],
                    "names in \(root): \(SyncWorld.names(in: root).map { String(decoding: $0, as: UTF8.self) })")
        }
        #expect(Self.bytes(world.onServer(Self.nfd)) == "the other form, new here")
        #expect(Self.bytes(world.onServer(Self.nfc)) == "ours, synced")
        #expect(world.requests("MOVE", since: mark).isEmpty, "moved on the server: \(world.requests("MOVE", since: mark))")
        #expect(results.last?.normalisationTwins.count == 1)
    }

    /// The bytes at `path`, read by an exact byte name (Foundation is not asked to map it).
    static func bytes(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var data = [UInt8](repeating: 0, count: 4096)
        let count = read(fd, &data, data.count)
        return count < 0 ? nil : String(decoding: data.prefix(count), as: UTF8.self)
    }

    /// Writes `text` to `path` in place (truncating) by its exact bytes, with a new mtime.
    static func write(_ path: String, _ text: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ProviderError(.cannotSynchronize, "cannot write \(path)") }
        defer { close(fd) }
        _ = Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }
}

/// The same on a sync folder whose file system folds names (ext4 `casefold`, `chattr +F`):
/// it cannot hold both twins. The second is not brought down (an item in error saying why),
/// the first is never overwritten, and the server is not touched. Needs root (a loop-mounted
/// ext4 image) and a kernel whose ext4 has casefold.
@Suite("Unicode normalisation twins on a casefold folder", .serialized,
       .enabled(if: getuid() == 0, "needs root to loop-mount an ext4 image with casefold"),
       .enabled(if: FileManager.default.fileExists(atPath: "/sys/fs/ext4/features/casefold"),
                "this kernel's ext4 has no casefold (/sys/fs/ext4/features/casefold is missing)"))
struct CasefoldTwinTests {
    @Test("two server twins into a casefold folder: one is downloaded, the other reported, nothing overwritten or renamed",
          arguments: Remote.withOtherServers)
    func secondTwinNotDownloaded(_ remote: Remote) async throws {
        let (nfc, nfd) = (NormalisationTwinTests.nfc, NormalisationTwinTests.nfd)
        let world = try await SyncWorld(remote)
        defer { Task { await world.close() } }
        let image = world.scratch + "/casefold.img", mountPoint = world.scratch + "/casefold"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: image, contents: nil) && truncate(image, 32 << 20) == 0)
        try #require(runTool("/sbin/mkfs.ext4", ["-q", "-F", "-O", "casefold", image]) == 0, "mkfs.ext4 -O casefold failed")
        try #require(runTool("/bin/mount", ["-o", "loop", image, mountPoint]) == 0, "cannot loop-mount \(image)")
        defer { if runTool("/bin/umount", [mountPoint]) != 0 { runTool("/bin/umount", ["-l", mountPoint]) } }
        let root = mountPoint + "/sync"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: false)
        try #require(runTool("/usr/bin/chattr", ["+F", root]) == 0, "chattr +F \(root) failed")
        let database = try StateDatabase(path: world.scratch + "/state-casefold.sqlite")
        let pass = SyncWorld.makePass(store: world.store, database: database, localRoot: root, host: "casefold")

        try world.writeOnServer(nfc, "composed")
        try world.writeOnServer(nfd, "decomposed")
        let mark = world.accessLogLines().count
        var results: [PassResult] = []
        for _ in 0..<3 { results.append(try await pass.run()) }
        try await world.accessLogSettled()

        let names = SyncWorld.names(in: root)
        try #require(names.count == 1, "names here: \(names.map { String(decoding: $0, as: UTF8.self) })")
        let kept = String(decoding: names[0], as: UTF8.self)
        #expect(NormalisationTwinTests.bytes(root + "/" + kept) == NormalisationTwinTests.bytes(world.onServer(kept)),
                "the file here is not the server's file of its name")
        #expect(Set(SyncWorld.names(in: world.remoteDisk)) == [Array(nfc.utf8), Array(nfd.utf8)])
        #expect(NormalisationTwinTests.bytes(world.onServer(nfc)) == "composed")
        #expect(NormalisationTwinTests.bytes(world.onServer(nfd)) == "decomposed")
        for method in ["MOVE", "PUT", "DELETE"] {
            let requests = world.requests(method, since: mark).filter { !$0.contains(".tidesync-tmp-probe") }
            #expect(requests.isEmpty, "\(method) on the server: \(requests)")
        }
        let failures = results.flatMap(\.report.failed)
        #expect(failures.contains { $0.error.message.contains("folds names") }, "failures: \(failures.map(\.error))")
        #expect(results.last?.normalisationTwins.count == 1)
    }
}
