@testable import Daemon
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
        #expect(failure.message.contains("uid 4242") && failure.message.contains("thumbnail_cache"))
        let other = ThumbnailCacheOwner.resolve(folderOwner: 1000, daemonUID: 1001, configured: nil, environment: [:],
                                                account: accounts)
        guard case .failure(let why) = other else { Issue.record("\(other)"); return }
        #expect(why.message.contains("uid 1000") && why.message.contains("uid 1001"))
    }

    @Test("the user database is read (root is uid 0 with a home)")
    func userDatabase() throws {
        let root = try #require(ThumbnailCacheOwner.account(0))
        #expect(root.uid == 0 && root.home.hasPrefix("/"))
    }
}
