import Foundation
import Testing
import TestSupport

/// The crash tests run over `CrashRecoveryTests.Remote.available`, and the two-client test
/// needs the private Apache: without it their Apache cases are left out. This test is
/// then skipped, so the closing line counts the gap instead of the run narrowing in silence.
@Suite("the command-line tests' server")
struct CommandLineServerTests {
    @Test("the private Apache answers, so the crash tests also run their Apache case",
          .enabled(if: TestApache.depthInfinityConfigured,
                   "the private Apache is not running (TIDESYNC_TEST_DAV_INF_URL unset): the crash tests ran on the local-directory store only and the two-client test did not run; packaging/test.sh starts it"))
    func apacheAnswers() async throws {
        #expect(CrashRecoveryTests.Remote.available.contains(.apache))
        let (url, disk) = try #require(try DaemonFixture.sharedApacheCollection())
        defer { try? FileManager.default.removeItem(atPath: disk) }
        let code = try await Binary.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PROPFIND", "-H", "Depth: 0",
                                                          "-u", "\(TestApache.user ?? ""):\(TestApache.password ?? "")", url],
                                        environment: nil).output
        #expect(code == "207", "PROPFIND \(url) answered \(code)")
    }
}
