import Foundation
import SyncModel
import Testing
import TestSupport
@testable import WebDAV

/// The write-guard probe's scratch files are named after the client (`probeOwner`), so
/// what a probe killed half-way left (a `kill -9` at that moment) is removed by the next
/// start's probe instead of staying on the server for good; another client's are not touched.
@Suite("the probe's leftovers")
struct ProbeLeftoverContractTests {
    static var kinds: [StoreKind] { StoreKind.available.filter { $0.isWebDAV && $0 != .apacheDepthInfinity } }

    @Test("a killed probe's scratch files are removed by this client's next probe; another client's stay", arguments: kinds)
    func leftoversRemoved(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            let owner = "test-" + UUID().uuidString.prefix(8)
            let ours = WebDAVStore.probePrefix + owner, theirs = WebDAVStore.probePrefix + "other-" + owner
            let leftovers = try [RemotePath([ours]), RemotePath([ours + "-b"]), RemotePath([ours + "-c"]), RemotePath([ours + "-d?e;f"]),
                                 RemotePath([ours + "-d"]), RemotePath([ours + "-d?e"]), RemotePath([theirs])]
            let client = try f.webDAVClient(probeOwner: owner)
            do {
                // What a killed probe leaves: its scratch file with bytes in it, the locks
                // check's second file, and the destination check's file wherever it was.
                for file in leftovers {
                    let status = try await client.probePut(file, body: .init(string: "left by a killed probe")).status
                    #expect((200..<300).contains(status.code), "PUT \(file): \(status.code)")
                }
                _ = try await client.writeGuard()
                for file in leftovers {
                    let status = try await client.connection.send(client.connection.request("HEAD", path: client.paths.requestPath(file))).status
                    #expect(status.code == (file.name == theirs ? 200 : 404), "\(file) after the probe: \(status.code)")
                }
            } catch {
                await f.close(client: client)
                throw error
            }
            await f.close(client: client)
        }
    }

    @Test("a killed probe's lock on its scratch file does not make the next probe fail or guess", arguments: kinds.filter { [.rclone, .nginx, .wsgidav].contains($0) })
    func lockedLeftover(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            let owner = "test-" + UUID().uuidString.prefix(8)
            let killed = try f.webDAVClient(probeOwner: owner), next = try f.webDAVClient(probeOwner: owner)
            do {
                let scratch = try RemotePath([killed.probeName])
                _ = try await killed.probePut(scratch)
                let lock = try await killed.sendLock(scratch)
                #expect((200..<300).contains(lock.status.code), "LOCK: \(lock.status.code)")
                // The lock outlives its client: the next start's probe meets 423 on its name.
                #expect(try await next.writeGuard() == .locks)
                if let token = lock.headers.first(name: "Lock-Token") { await killed.unlock(scratch, token: token) }
            } catch {
                await f.close(client: killed)
                await f.close(client: next)
                throw error
            }
            await f.close(client: killed)
            await f.close(client: next)
        }
    }
}
