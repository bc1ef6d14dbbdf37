import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

extension CrashRecoveryTests {
    /// The part's bytes a resumed download keeps: those below the last 4 MiB multiple
    /// under its size (what was surely fsynced; `WebDAVStore.durableLength`).
    static func durable(_ size: Int64) -> Int64 { size == 0 ? 0 : (size - 1) / (4 << 20) * (4 << 20) }

    /// This collection's lines in Apache's access log.
    func accessLogLines() -> [String] {
        guard let path = TestApache.accessLog,
              let text = FileManager.default.contents(atPath: path) else { return [] }
        let marker = "/" + (remoteDisk as NSString).lastPathComponent + "/"
        return String(decoding: text, as: UTF8.self).split(separator: "\n").map(String.init).filter { $0.contains(marker) }
    }

    @Test("kill -9 during a download of 200 MiB: the restart asks only for the rest",
          .enabled(if: TestApache.accessLog != nil, "needs the private Apache"))
    func resumeAfterKill() async throws {
        try configure(.apache)
        // Sizes in MiB; the environment can ask for others to measure by hand (1024 and 900).
        let environment = ProcessInfo.processInfo.environment
        let mebibytes = environment["TIDESYNC_TEST_RESUME_MIB"].flatMap { Int64($0) } ?? 200
        let cutAt = (environment["TIDESYNC_TEST_RESUME_CUT_MIB"].flatMap { Int64($0) } ?? 120) << 20
        let size = mebibytes << 20
        var cut: Int64 = 0, seed: UInt8 = 0, expected: [String: String] = [:], before = 0
        // A starved test thread may kill the daemon only after its download ended (then
        // no part is left and nothing is resumed): the kill is tried again on a new version.
        while cut == 0 && seed < 3 {
            try await writeOld(megabytes: Int(mebibytes), seed: seed)
            expected = await Self.tree(remoteDisk)
            // Logged once done: every GET of an earlier try is in the log by now.
            before = accessLogLines().filter { $0.contains("\"GET ") && $0.contains("/big.bin ") }.count
            let daemon = try start()
            let caught = await waitOnOwnThread(for: daemon, timeout: .seconds(300)) { [local] in Self.partialSize(in: local, prefix: ".tidesync-part-") > cutAt }
            await kill9(daemon)
            #expect(caught, "the download was never seen past \(cutAt >> 20) MiB")
            cut = Self.partialSize(in: local, prefix: ".tidesync-part-")
            seed += 1
            if cut == 0 { try await expectConverged(expected) }
        }
        try #require(cut > 0, "three times the download ended before the kill")
        try await expectConverged(expected)
        // The second GET of big.bin: a 206 whose bytes sent (%O: body and head) are the rest
        // after what the part held durably, not the whole file.
        var gets: [String] = []
        _ = try await waitUntil(timeout: .seconds(60)) {  // polling for Apache's log line
            gets = Array(accessLogLines().filter { $0.contains("\"GET ") && $0.contains("/big.bin ") }.dropFirst(before))
            return gets.count >= 2
        }
        try #require(gets.count == 2, "GETs of big.bin: \(gets)")
        let fields = gets[1].split(separator: " ")
        let status = fields.dropLast(3).last.map(String.init), sent = fields.dropLast(1).last.flatMap { Int64($0) } ?? -1
        let rest = size - Self.durable(cut)
        #expect(status == "206", "second GET: \(gets[1])")
        #expect(sent >= rest && sent < rest + 4096, "sent \(sent) bytes after a cut at \(cut), expected about \(rest): \(gets[1])")
        print("resume: file \(size) bytes, part \(cut) bytes at the kill, the resumed GET sent \(sent) bytes: \(gets[1])")
    }

    /// Writes big.bin on the server, an hour old: Apache's ETag is then strong (a weak one,
    /// in the first second after a change, cannot go in If-Range). `seed` varies the bytes.
    func writeOld(megabytes: Int, seed: UInt8) async throws {
        let path = remoteDisk + "/big.bin"
        try await Self.makeBigFile(path, megabytes: megabytes)
        if seed != 0, let handle = FileHandle(forWritingAtPath: path) {
            try handle.write(contentsOf: [UInt8](repeating: seed, count: 4096))
            try handle.close()
        }
        var attributes: [FileAttributeKey: Any] = [.modificationDate: Date().addingTimeInterval(-3600 - Double(seed))]
        if getuid() == 0, let owner = TestApache.owner { attributes[.ownerAccountName] = owner }
        try FileManager.default.setAttributes(attributes, ofItemAtPath: path)
    }

    @Test("a part of a version the server no longer has is removed, never resumed",
          .enabled(if: TestApache.accessLog != nil, "needs the private Apache"))
    func stalePartRemoved() async throws {
        try configure(.apache)
        // As in the test above: a starved test thread may kill the daemon only after its
        // download ended (seen on a fresh-clone run: no part left); then the kill is tried
        // again on a new version.
        var parts: [String] = [], seed: UInt8 = 0
        while parts.isEmpty && seed < 3 {
            try await writeOld(megabytes: 100, seed: seed)
            let daemon = try start()
            let caught = await waitOnOwnThread(for: daemon, timeout: .seconds(120)) { [local] in Self.partialSize(in: local, prefix: ".tidesync-part-") > 40 << 20 }
            await kill9(daemon)
            #expect(caught, "the download was never seen past 40 MiB")
            parts = try FileManager.default.contentsOfDirectory(atPath: local).filter { $0.hasPrefix(".tidesync-part-") }
            seed += 1
        }
        #expect(parts.count == 1, "parts after the kill (\(seed) tries): \(parts)")
        try await writeOld(megabytes: 100, seed: 9)  // another version: another ETag
        // Converged: the new bytes, and no part left over (expectConverged checks both).
        try await expectConverged(await Self.tree(remoteDisk))
        let gets = accessLogLines().filter { $0.contains("\"GET ") && $0.contains("/big.bin ") }
        #expect(!gets.contains { $0.contains("\" 206 ") }, "a range of another version was asked for: \(gets)")
    }
}
