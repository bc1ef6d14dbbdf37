import Foundation
import SyncModel
import Testing
import TestSupport

/// The contract tests run over `StoreKind.available`: the WebDAV kinds only when their
/// private server runs. Without one, these tests are skipped, so the closing line counts
/// the kinds left out instead of the run narrowing in silence.
@Suite("the contract suite's servers")
struct ServerKindsTests {
    @Test("the private Apache answers, so the contract tests also run on both Apache kinds",
          .enabled(if: TestApache.configured,
                   "the private Apache is not running (TIDESYNC_TEST_DAV_URL unset): the Apache kinds of every contract test were left out; packaging/test.sh starts it"))
    func apacheAnswers() async throws {
        #expect(StoreKind.available.contains(.apache) && StoreKind.available.contains(.apacheDepthInfinity))
        for kind in [StoreKind.apache, .apacheDepthInfinity] { try await Self.probe(kind) }
    }

    @Test("the private rclone answers, so the contract tests also run on rclone",
          .enabled(if: TestRclone.configured,
                   "rclone serve webdav is not running (TIDESYNC_TEST_RCLONE_URL unset): the rclone kind of every contract test was left out; install rclone, packaging/test.sh starts it"))
    func rcloneAnswers() async throws {
        #expect(StoreKind.available.contains(.rclone))
        try await Self.probe(.rclone)
    }

    @Test("the private nginx answers, so the contract tests also run on nginx",
          .enabled(if: TestDAVServer.nginx.configured,
                   "nginx is not running (TIDESYNC_TEST_NGINX_URL unset): the nginx kind of every contract test was left out; install nginx-light and libnginx-mod-http-dav-ext, packaging/test.sh starts it"))
    func nginxAnswers() async throws {
        try await Self.probe(.nginx)
    }

    @Test("the private lighttpd answers, so the contract tests also run on lighttpd",
          .enabled(if: TestDAVServer.lighttpd.configured,
                   "lighttpd is not running (TIDESYNC_TEST_LIGHTTPD_URL unset): the lighttpd kind of every contract test was left out; install lighttpd and lighttpd-mod-webdav, packaging/test.sh starts it"))
    func lighttpdAnswers() async throws {
        try await Self.probe(.lighttpd)
    }

    @Test("the private WsgiDAV answers, so the contract tests also run on WsgiDAV",
          .enabled(if: TestDAVServer.wsgidav.configured,
                   "WsgiDAV is not running (TIDESYNC_TEST_WSGIDAV_URL unset): the wsgidav kind of every contract test was left out; install python3-venv (PyPI must be reachable), packaging/test.sh starts it"))
    func wsgidavAnswers() async throws {
        try await Self.probe(.wsgidav)
    }

    /// A fresh collection of `kind` lists as empty.
    static func probe(_ kind: StoreKind) async throws {
        #expect(StoreKind.available.contains(kind))
        let fixture = try await StoreFixture(kind)
        do {
            let children = try await fixture.store.children(of: .root)
            #expect(children.isEmpty, "\(kind): a fresh collection lists \(children.map(\.path))")
        } catch {
            await fixture.close()
            throw error
        }
        await fixture.close()
    }
}
