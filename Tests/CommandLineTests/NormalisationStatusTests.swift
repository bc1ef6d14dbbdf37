import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Issue 13 item 5, as `tidesync status` shows it: two server names that differ only in
/// Unicode normalisation are both synced as they are, and the real daemon's status lists the
/// pair as a warning, on the screen and in `--json` (following the schema).
@Suite("status lists normalisation twins", .serialized,
       .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"))
struct NormalisationStatusTests {
    @Test("twins on the server: both here byte-exact, status warns with both paths, the schema holds")
    func statusWarns() async throws {
        let nfc = "caf\u{00E9}.txt", nfd = "cafe\u{0301}.txt"
        let fixture = try DaemonFixture()
        let schema = try SchemaValidator(schemaFile: DaemonFixture.repository + "/packaging/schema/status.schema.json")
        try fixture.configure(poll: "1h")
        try Data("composed".utf8).write(to: URL(fileURLWithPath: fixture.remoteDisk + "/" + nfc))
        try Data("decomposed".utf8).write(to: URL(fileURLWithPath: fixture.remoteDisk + "/" + nfd))
        try fixture.startDaemon()
        defer { if let daemon = fixture.daemon, daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
        #expect(try await fixture.waitUntilIdle(), "never idle; log:\n\(fixture.log.suffix(2000))")

        let names = Set(((try? FileManager.default.contentsOfDirectory(atPath: fixture.local)) ?? []).map { Array($0.utf8) })
        #expect(names == [Array(nfc.utf8), Array(nfd.utf8)], "names here: \(names)")
        let (status, json, text) = try await fixture.statusJSON()
        #expect(status == 0, "a warning is not an error: \(text)")
        #expect(schema.problems(json).isEmpty, "\(schema.problems(json))\n\(text)")
        let twins = DaemonFixture.firstDomain(json)["normalisationTwins"] as? [[String: Any]] ?? []
        #expect(twins.count == 1, "\(text)")
        let paths = twins.first?["paths"] as? [String] ?? []
        #expect(Set(paths.map { Array($0.utf8) }) == [Array(nfc.utf8), Array(nfd.utf8)], "paths: \(paths)")
        #expect((twins.first?["message"] as? String)?.contains("Unicode normalisation") == true)

        let screen = try await fixture.tidesync(["status"])
        #expect(screen.output.contains("differ only in Unicode normalisation"), "\(screen.output)")
        #expect(await fixture.stopDaemon() == 0)
    }
}
