import Foundation
import SyncModel
import Testing
import TestSupport

/// The scenario tests run over `Remote.withOtherServers`: the local-directory store always,
/// the private Apache when `packaging/test.sh` started it, and nginx, lighttpd, WsgiDAV and
/// rclone when it started them. Without Apache, the servers' cases are left out — the first
/// test is then skipped, so the closing line counts the gap instead of the run narrowing in
/// silence (test.sh counts another server it could not start the same way).
@Suite("the scenarios' servers")
struct ServerCasesTests {
    @Test("the private Apache answers, so every scenario test also runs its Apache case",
          .enabled(if: TestApache.depthInfinityConfigured,
                   "the private Apache is not running (TIDESYNC_TEST_DAV_INF_URL unset): every scenario test ran on the local-directory store only; packaging/test.sh starts it"))
    func apacheAnswers() async throws {
        #expect(Remote.available.contains(.apache))
        #expect(Remote.withOtherServers.contains(.apache))
    }

    @Test("every server the scenarios run on takes a file and lists it back", arguments: Remote.withOtherServers)
    func serverAnswers(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.write("probe.txt", "probe")
            try await world.sync()
            #expect(world.serverText("probe.txt") == "probe")
            try await world.expectAgreement()
        }
    }
}
