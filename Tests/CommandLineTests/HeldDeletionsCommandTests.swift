import Foundation
import Testing
import TestSupport

/// Issue 13, item 3, through the real daemon and binary: a server emptied at once holds the
/// local deletions whatever the domain's size, `status` says what is held and how to release
/// it, and `tidesync allow-deletions` releases that hold once.
@Suite("held deletions and allow-deletions with the real daemon", .serialized,
       .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"))
final class HeldDeletionsCommandTests {
    let fixture: DaemonFixture
    let schema: SchemaValidator

    init() throws {
        fixture = try DaemonFixture()
        schema = try SchemaValidator(schemaFile: DaemonFixture.repository + "/packaging/schema/status.schema.json")
    }

    @Test("a server emptied at once: three local files held, shown in status, released by allow-deletions")
    func emptiedServer() async throws {
        try fixture.configure()
        for n in 0..<3 { try Data("file \(n)".utf8).write(to: URL(fileURLWithPath: fixture.local + "/f\(n).txt")) }
        try fixture.startDaemon()
        #expect(try await waitUntil(timeout: .seconds(30)) {
            (try? FileManager.default.contentsOfDirectory(atPath: fixture.remoteDisk))?.filter { $0.hasSuffix(".txt") }.count == 3
        }, "never synced; log:\n\(fixture.log.suffix(2000))")
        #expect(try await fixture.waitUntilIdle())
        #expect(try await fixture.tidesync(["allow-deletions", "st"]).output.contains("Nothing is held back"))

        // Emptied while the daemon is stopped, so its next walk sees it empty at once: a poll
        // between two removals saw f0 alone gone, an ordinary deletion (fresh clone, run 2
        // of eb27f61). A pause would not do: a paused domain still walks and plans.
        #expect(await fixture.stopDaemon() == 0)
        for n in 0..<3 { try FileManager.default.removeItem(atPath: fixture.remoteDisk + "/f\(n).txt") }
        try fixture.startDaemon()
        var held: [String: Any] = [:]
        var problems: [String] = []
        let wasHeld = try await waitUntil(timeout: .seconds(30)) {
            let (_, json, _) = try await fixture.statusJSON()
            problems = schema.problems(json)
            held = DaemonFixture.firstDomain(json)["heldDeletions"] as? [String: Any] ?? [:]
            return !held.isEmpty
        }
        #expect(wasHeld, "never held; log:\n\(fixture.log.suffix(2000))")
        #expect(problems.isEmpty, "\(problems)")
        #expect(held["items"] as? Int == 3)
        #expect(held["side"] as? String == "local")
        #expect(held["release"] as? String == "tidesync allow-deletions st")
        let screen = try await fixture.tidesync(["status"]).output
        #expect(screen.contains("held: 3 deletion(s) in the sync folder (the server's folder is empty); to carry them out run `tidesync allow-deletions st`"), "\(screen)")
        for n in 0..<3 { #expect(FileManager.default.fileExists(atPath: fixture.local + "/f\(n).txt")) }

        let release = try await fixture.tidesync(["allow-deletions", "st"])
        #expect(release.status == 0)
        #expect(release.output.contains("Held deletions released: st"), "\(release.output)")
        #expect(try await waitUntil(timeout: .seconds(30)) {
            (0..<3).allSatisfy { !FileManager.default.fileExists(atPath: fixture.local + "/f\($0).txt") }
        }, "never deleted; log:\n\(fixture.log.suffix(2000))")
        #expect(try await fixture.waitUntilIdle())
        #expect(try await fixture.tidesync(["allow-deletions", "nope"]).status == 4)
    }
}
