import Foundation
import SyncModel
import Testing
import TestSupport

/// The scenario tests run over `Remote.available`: the local-directory store always, the
/// private Apache when `packaging/test.sh` started it. Without it, their Apache cases are
/// left out — this test is then skipped, so the closing line counts the gap instead of
/// the run narrowing in silence.
@Suite("the scenarios' servers")
struct ServerCasesTests {
    @Test("the private Apache answers, so every scenario test also runs its Apache case",
          .enabled(if: TestApache.depthInfinityConfigured,
                   "the private Apache is not running (TIDESYNC_TEST_DAV_INF_URL unset): every scenario test ran on the local-directory store only; packaging/test.sh starts it"))
    func apacheAnswers() async throws {
        #expect(Remote.available.contains(.apache))
        try await withWorld(.apache) { world in
            try world.write("probe.txt", "probe")
            try await world.sync()
            #expect(world.serverText("probe.txt") == "probe")
        }
    }
}
