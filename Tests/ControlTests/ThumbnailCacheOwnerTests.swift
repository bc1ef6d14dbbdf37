@testable import Daemon
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Whose cache a domain's thumbnails go to: the local folder owner's, written as them.
struct ThumbnailCacheOwnerTests {
    let alice = ThumbnailCacheOwner.Account(uid: 1000, gid: 100, home: "/home/alice")
    func accounts(_ uid: uid_t) -> ThumbnailCacheOwner.Account? { uid == 1000 ? alice : nil }

    @Test("a root daemon writes a user's folder's thumbnails into that user's home cache, as that user")
    func rootForAUser() {
        let found = ThumbnailCacheOwner.resolve(folderOwner: 1000, daemonUID: 0, configured: nil,
                                                environment: ["HOME": "/root", "XDG_CACHE_HOME": "/root/.cache"], account: accounts)
        #expect(found == .success(ThumbnailCacheOwner(root: "/home/alice/.cache/thumbnails",
                                                      identity: .init(uid: 1000, gid: 100))))
    }

    @Test("thumbnail_cache is used as given, still written as the folder's owner")
    func configured() {
        let found = ThumbnailCacheOwner.resolve(folderOwner: 1000, daemonUID: 0, configured: "/data/alice/thumbs",
                                                environment: [:], account: accounts)
        #expect(found == .success(ThumbnailCacheOwner(root: "/data/alice/thumbs", identity: .init(uid: 1000, gid: 100))))
    }

    @Test("a daemon that is the folder's owner uses its own XDG cache and no other identity")
    func owner() {
        let found = ThumbnailCacheOwner.resolve(folderOwner: 1000, daemonUID: 1000, configured: nil,
                                                environment: ["HOME": "/home/alice", "XDG_CACHE_HOME": "/fast/cache"],
                                                account: accounts)
        #expect(found == .success(ThumbnailCacheOwner(root: "/fast/cache/thumbnails", identity: nil)))
    }

    @Test("no cache for an owner without a home, nor for another user's folder when not root")
    func refused() throws {
        let unknown = ThumbnailCacheOwner.resolve(folderOwner: 4242, daemonUID: 0, configured: nil, environment: [:],
                                                  account: accounts)
        guard case .failure(let failure) = unknown else { Issue.record("\(unknown)"); return }
        #expect(failure.message.contains("uid 4242") && failure.message.contains("user database"))
        let homeless = ThumbnailCacheOwner.resolve(folderOwner: 7, daemonUID: 0, configured: nil, environment: [:]) { uid in
            ThumbnailCacheOwner.Account(uid: uid, gid: 7, home: nil)
        }
        guard case .failure(let noHome) = homeless else { Issue.record("\(homeless)"); return }
        #expect(noHome.message.contains("no home folder") && noHome.message.contains("thumbnail_cache"))
        let configured = ThumbnailCacheOwner.resolve(folderOwner: 7, daemonUID: 0, configured: "/srv/thumbs", environment: [:]) { uid in
            ThumbnailCacheOwner.Account(uid: uid, gid: 7, home: nil)
        }
        #expect(configured == .success(ThumbnailCacheOwner(root: "/srv/thumbs", identity: .init(uid: 7, gid: 7))))
        let other = ThumbnailCacheOwner.resolve(folderOwner: 1000, daemonUID: 1001, configured: nil, environment: [:],
                                                account: accounts)
        guard case .failure(let why) = other else { Issue.record("\(other)"); return }
        #expect(why.message.contains("uid 1000") && why.message.contains("uid 1001"))
    }

    @Test("the user database is read (root is uid 0 with a home)")
    func userDatabase() throws {
        let root = try #require(ThumbnailCacheOwner.account(0))
        #expect(root.uid == 0 && root.home?.hasPrefix("/") == true)
        // nobody's home is /nonexistent: an entry, with no home.
        #expect(ThumbnailCacheOwner.account(65534).map { $0.uid == 65534 && $0.home == nil } == true)
    }

    @Test("retries wait 1 minute, doubling, at most 6 hours")
    func retryDelays() {
        let minutes = (1...12).map { ThumbnailMaker.retryDelay(afterFailures: $0).components.seconds / 60 }
        #expect(minutes == [1, 2, 4, 8, 16, 32, 64, 128, 256, 360, 360, 360])
        #expect(ThumbnailMaker.retryDelay(afterFailures: 0) == .seconds(60) && ThumbnailMaker.retryDelay(afterFailures: .max) == .seconds(6 * 3600))
    }

    @Test("a root daemon writing as itself refuses a cache path through a user's folder, a link, or a folder others may write")
    func rootWritesOnlyAlongRootsFolders() throws {
        let scratch = NSTemporaryDirectory() + "tidesync-owner-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: scratch + "/mine/deeper", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        #expect(chmod(scratch, 0o755) == 0 && chmod(scratch + "/mine", 0o755) == 0)
        #expect(ThumbnailCacheOwner.userControlledFolder(on: scratch + "/mine/deeper/thumbnails") == nil)
        #expect(chmod(scratch + "/mine", 0o777) == 0)
        #expect(ThumbnailCacheOwner.userControlledFolder(on: scratch + "/mine/deeper/thumbnails")?.contains("may be written by other users") == true)
        #expect(chmod(scratch + "/mine", 0o755) == 0 && symlink(scratch + "/mine", scratch + "/link") == 0)
        #expect(ThumbnailCacheOwner.userControlledFolder(on: scratch + "/link/deeper")?.contains("symbolic link") == true)
        guard geteuid() == 0 else { return }
        #expect(chown(scratch + "/mine", 1000, 1000) == 0)
        #expect(ThumbnailCacheOwner.userControlledFolder(on: scratch + "/mine/deeper/thumbnails")?.contains("belongs to uid 1000") == true)
    }
}
