import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Issue 13 item 10: a download that meets a full disk leaves the old local file as it was
/// and no partial file, parks the domain with "the local disk is full", and goes on by
/// itself once space is freed. The sync folder is a 2 MiB tmpfs (root only); the real
/// `tidesync run` syncs it and the real `tidesync status` is asked.
@Suite("local disk full", .serialized,
       .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"),
       .enabled(if: getuid() == 0, "needs root to mount a small tmpfs as the sync folder; packaging/test.sh runs as root in CI"))
struct DiskFullTests {
    enum Store: String, CaseIterable, CustomTestStringConvertible {
        case localDirectory, apache
        var testDescription: String { rawValue }
        static var available: [Store] {
            TestApache.depthInfinityConfigured ? allCases : [.localDirectory]
        }
    }

    @Test("a download larger than the free space: old file intact, no partial file, parked as disk full, resumes when space is freed",
          arguments: Store.available)
    func downloadMeetsFullDisk(_ store: Store) async throws {
        let fixture = try DaemonFixture()
        try await Self.mount(fixture.local, options: "size=2m")
        defer { Self.unmount(fixture.local) }
        try await Self.startSynced(fixture, store: store)
        defer { if let daemon = fixture.daemon, daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }

        // Another client saves a version larger than the sync folder's free space.
        // Cheap to make (a closure per byte is seconds of a starved test thread in a debug build).
        var new = Data(repeating: 0xA5, count: 3 << 20)
        new.replaceSubrange(0..<Self.old.count, with: Self.old.reversed())
        try Self.writeOnServer(fixture, "big.bin", new, store: store)
        try await Self.expectParkedDiskFull(fixture)
        #expect((try? Data(contentsOf: URL(fileURLWithPath: fixture.local + "/big.bin"))) == Self.old, "the old local file changed")
        // Parked, the daemon retries on its own: a retry may be writing its part right now
        // (seen beside two CPU hogs). What must never stay is a part once a try is over.
        let noPart = try await waitUntil(timeout: .seconds(60)) { Self.temporaries(in: fixture.local).isEmpty }
        #expect(noPart, "partial files left: \(Self.temporaries(in: fixture.local))")

        // Space is freed (the file system grows): the daemon goes on by itself, no restart.
        try await Self.remount(fixture.local, options: "size=16m")
        let arrived = try await waitUntil(timeout: .seconds(90)) {
            (try? Data(contentsOf: URL(fileURLWithPath: fixture.local + "/big.bin"))) == new
        }
        #expect(arrived, "the new version never arrived after space was freed; log:\n\(fixture.log.suffix(3000))")
        #expect(try await fixture.waitUntilIdle(seconds: 60))
        #expect(Self.temporaries(in: fixture.local).isEmpty)
        #expect(fixture.daemon?.isRunning == true)
        await fixture.stopDaemon()
    }

    @Test("no inode left for the download's file: parked as disk full, nothing half-made, resumes when files are deleted",
          arguments: Store.available)
    func downloadFindsNoInode(_ store: Store) async throws {
        let fixture = try DaemonFixture()
        try await Self.mount(fixture.local, options: "size=16m,nr_inodes=64")
        defer { Self.unmount(fixture.local) }
        try await Self.startSynced(fixture, store: store)
        defer { if let daemon = fixture.daemon, daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }

        // Files the sync never looks at (`*~` is excluded) take every inode left.
        var fillers: [String] = []
        while fillers.count < 200 {
            let path = fixture.local + "/filler-\(fillers.count)~"
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            if fd < 0 { break }
            close(fd)
            fillers.append(path)
        }
        #expect(errno == ENOSPC, "the fillers stopped on errno \(errno), not ENOSPC")
        try Self.writeOnServer(fixture, "new.txt", Data("a new file from another client".utf8), store: store)
        try await Self.expectParkedDiskFull(fixture)
        #expect(!FileManager.default.fileExists(atPath: fixture.local + "/new.txt"))
        #expect((try? Data(contentsOf: URL(fileURLWithPath: fixture.local + "/big.bin"))) == Self.old)

        for path in fillers { unlink(path) }
        let arrived = try await waitUntil(timeout: .seconds(90)) {
            (try? String(contentsOfFile: fixture.local + "/new.txt", encoding: .utf8)) == "a new file from another client"
        }
        #expect(arrived, "the new file never arrived after inodes were freed; log:\n\(fixture.log.suffix(3000))")
        #expect(try await fixture.waitUntilIdle(seconds: 60))
        #expect(Self.temporaries(in: fixture.local).isEmpty)
        await fixture.stopDaemon()
    }

    static let old = Data((0..<64 * 1024).map { UInt8(truncatingIfNeeded: $0 &* 7) })

    /// Configures `store`, writes `big.bin` (`old`) into the sync folder, starts the daemon
    /// and waits until the file is on the server and the domain idle.
    static func startSynced(_ fixture: DaemonFixture, store: Store) async throws {
        if store == .apache {
            let collection = try #require(try DaemonFixture.sharedApacheCollection())
            try fixture.configure(url: collection.url, disk: collection.disk)
        } else {
            try fixture.configure()
        }
        try old.write(to: URL(fileURLWithPath: fixture.local + "/big.bin"))
        try fixture.startDaemon()
        let uploaded = try await waitUntil(timeout: .seconds(60)) {
            (try? Data(contentsOf: URL(fileURLWithPath: fixture.remoteDisk + "/big.bin"))) == old
        }
        #expect(uploaded, "the first version never reached the server; log:\n\(fixture.log.suffix(3000))")
        #expect(try await fixture.waitUntilIdle(seconds: 60))
    }

    /// Puts `data` at `name` on the server's disk in one rename, as another client's save.
    static func writeOnServer(_ fixture: DaemonFixture, _ name: String, _ data: Data, store: Store) throws {
        let staging = fixture.remoteDisk + "/.staging-" + name
        try data.write(to: URL(fileURLWithPath: staging))
        giveToServer(staging, store: store)
        try #require(rename(staging, fixture.remoteDisk + "/" + name) == 0, "cannot rename \(staging) into place")
    }

    /// Waits until `status --json` says the domain is in error with `localDiskFull`, and the
    /// screen says "the local disk is full".
    static func expectParkedDiskFull(_ fixture: DaemonFixture) async throws {
        var last: [String: Any] = [:]
        let parked = try await waitUntil(timeout: .seconds(60)) {
            last = DaemonFixture.firstDomain(try await fixture.statusJSON().json)
            return (last["error"] as? [String: Any])?["code"] as? String == "localDiskFull"
        }
        #expect(parked, "status never said the disk is full: \(last); log:\n\(fixture.log.suffix(3000))")
        #expect(last["state"] as? String == "error")
        let screen = try await fixture.tidesync(["status"]).output
        #expect(screen.contains("the local disk is full"), "status said: \(screen)")
    }

    /// Names with the download temporaries' prefix anywhere in the folder.
    static func temporaries(in folder: String) -> [String] {
        (FileManager.default.enumerator(atPath: folder)?.allObjects as? [String] ?? [])
            .filter { ($0 as NSString).lastPathComponent.hasPrefix(".tidesync-part-") }
    }

    static func giveToServer(_ path: String, store: Store) {
        guard store == .apache, let owner = TestApache.owner else { return }
        try? FileManager.default.setAttributes([.ownerAccountName: owner, .groupOwnerAccountName: owner], ofItemAtPath: path)
    }

    static func mount(_ folder: String, options: String) async throws {
        let result = try await Binary.run("/bin/mount", ["-t", "tmpfs", "-o", "\(options),mode=0755", "tidesync-test", folder],
                                          environment: nil)
        try #require(result.status == 0, "cannot mount a tmpfs on \(folder): \(result.errors)")
    }

    static func remount(_ folder: String, options: String) async throws {
        let result = try await Binary.run("/bin/mount", ["-o", "remount,\(options)", folder], environment: nil)
        try #require(result.status == 0, "cannot grow the tmpfs on \(folder): \(result.errors)")
    }

    /// Unmounts `folder`; lazily when something still holds it, so the scratch home can go.
    static func unmount(_ folder: String) {
        if runTool("/bin/umount", [folder], silenced: true) != 0 { runTool("/bin/umount", ["-l", folder], silenced: true) }
    }
}
