import Foundation
import SystemCalls
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The thread that writes into a user's thumbnail cache as that user, while the rest of the
/// daemon stays root: files it makes are the user's, the user's permissions stop it (root's
/// would not), and the process's other threads keep their own identity.
@Suite("a thread acting as another user",
       .enabled(if: geteuid() == 0, "taking another user's identity needs root (CAP_SETUID, CAP_SETGID)"))
struct IdentityThreadTests {
    let nobody = IdentityThread.Identity(uid: 65534, gid: 65534)

    func owner(_ path: String) -> (uid: uid_t, gid: gid_t)? {
        var info = stat()
        return lstat(path, &info) == 0 ? (info.st_uid, info.st_gid) : nil
    }

    @Test("files it makes are the user's; the user's permissions bind it; other threads stay root")
    func actsAsTheUser() async throws {
        let scratch = NSTemporaryDirectory() + "tidesync-identity-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        #expect(chmod(scratch, 0o755) == 0)
        let open = scratch + "/open", closed = scratch + "/closed"
        #expect(mkdir(open, 0o777) == 0 && chmod(open, 0o777) == 0 && mkdir(closed, 0o700) == 0)
        let thread = try IdentityThread(name: "identity test", identity: nobody)
        defer { thread.finish() }
        let made = await thread.run { () -> Int32 in
            let descriptor = Glibc.open(open + "/made", O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
            defer { if descriptor >= 0 { close(descriptor) } }
            return descriptor >= 0 ? 0 : errno
        }
        #expect(made == 0)
        #expect(owner(open + "/made")?.uid == 65534 && owner(open + "/made")?.gid == 65534)
        // Root would write into a 0700 root folder; the user may not.
        let refused = await thread.run { () -> Int32 in mkdir(closed + "/inside", 0o700) == 0 ? 0 : errno }
        #expect(refused == EACCES)
        #expect(owner(closed + "/inside") == nil)
        // A symbolic link the user planted does not take the thread anywhere the user cannot go.
        #expect(symlink(closed, open + "/link") == 0)
        let followed = await thread.run { () -> Int32 in
            let descriptor = Glibc.open(open + "/link/file", O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
            defer { if descriptor >= 0 { close(descriptor) } }
            return descriptor >= 0 ? 0 : errno
        }
        #expect(followed == EACCES && owner(closed + "/file") == nil)
        // This thread, and a fresh one with no identity, are still root.
        #expect(mkdir(closed + "/mine", 0o700) == 0 && owner(closed + "/mine")?.uid == 0)
        let plain = try IdentityThread(name: "plain", identity: nil)
        defer { plain.finish() }
        let plainMade = await plain.run { mkdir(closed + "/plain", 0o700) == 0 }
        #expect(plainMade == true && owner(closed + "/plain")?.uid == 0)
    }

    @Test("once finished, a closure is not run at all (not on the caller's thread as root)")
    func finishedRunsNothing() async throws {
        let thread = try IdentityThread(name: "finished", identity: nobody)
        thread.finish()
        let ran = await thread.run { true }
        #expect(ran == nil)
    }
}
