import Foundation
import SyncModel
import Testing
import TestSupport
@testable import WebDAV

/// The probe's last word on whether a server's PUT is atomic (`decisiveLook`, used when the
/// timed checks were slow) on every real server: WsgiDAV and rclone write a PUT into the
/// file as it arrives, Apache, nginx and lighttpd do not.
@Suite("the decisive in-place check on the real servers")
struct AtomicPutContractTests {
    @Test("a PUT larger than the connection holds tells a server that writes in place from one that does not",
          arguments: ProbeLeftoverContractTests.kinds)
    func decisive(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            let client = try f.webDAVClient(probeOwner: "test-" + UUID().uuidString.prefix(8))
            let scratch = try RemotePath([client.probeName])
            do {
                let put = try await client.probePut(scratch, body: .init(string: "tidesync")).status
                #expect((200..<300).contains(put.code), "PUT: \(put.code)")
                let verdict = await client.decisiveLook(scratch, baseline: 8)
                #expect(verdict == [.wsgidav, .rclone].contains(kind), "verdict \(String(describing: verdict))")
                await client.removeProbeFiles([scratch], token: nil)
            } catch {
                await f.close(client: client)
                throw error
            }
            await f.close(client: client)
        }
    }
}
