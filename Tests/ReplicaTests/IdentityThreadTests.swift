import Foundation
import SystemCalls
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The thread that writes into a user's thumbnail cache as that user, while the rest of the
/// daemon stays root: files it makes are the user's, the user's permissions and groups bind
/// it (root's would not), and no other thread, before, during or after, acts as the user.
@Suite("a thread acting as another user",
       .enabled(if: geteuid() == 0, "taking another user's identity needs root (CAP_SETUID, CAP_SETGID)"))
struct IdentityThreadTests {
    let nobody = IdentityThread.Identity(uid: 65534, gid: 65534)

    func owner(_ path: String) -> (uid: uid_t, gid: gid_t)? {
        var info = stat()
        return lstat(path, &info) == 0 ? (info.st_uid, info.st_gid) : nil
    }

    /// A folder of its own under /tmp, 0755, removed after `body`.
    func withScratch(_ body: (String) async throws -> Void) async throws {
        let scratch = NSTemporaryDirectory() + "tidesync-identity-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        #expect(chmod(scratch, 0o755) == 0)
        try await body(scratch)
    }

    /// `errno` of `open(path, O_CREAT)`, 0 when it was made.
    static func create(_ path: String) -> Int32 {
        let descriptor = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
        defer { if descriptor >= 0 { close(descriptor) } }
        return descriptor >= 0 ? 0 : errno
    }

    /// The "Uid:", "Gid:", "Groups:" and "CapEff:" lines of `/proc/<task>/status`.
    static func credentials(_ status: String) -> [String: String] {
        var lines: [String: String] = [:]
        for line in status.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, ["Uid", "Gid", "Groups", "CapEff"].contains(String(parts[0])) else { continue }
            lines[String(parts[0])] = parts[1].trimmingCharacters(in: .whitespaces)
        }
        return lines
    }

    @Test("files it makes are the user's; the user's permissions and groups bind it; links lead nowhere the user cannot go")
    func actsAsTheUser() async throws {
        try await withScratch { scratch in
            let open = scratch + "/open", closed = scratch + "/closed", group = scratch + "/group"
            #expect(mkdir(open, 0o777) == 0 && chmod(open, 0o777) == 0 && mkdir(closed, 0o700) == 0)
            #expect(mkdir(group, 0o770) == 0 && chmod(group, 0o770) == 0)  // root:root: root's groups would do
            let thread = try IdentityThread(name: "identity test", identity: nobody)
            defer { thread.finish() }
            #expect(await thread.run { Self.create(open + "/made") } == 0)
            #expect(owner(open + "/made")?.uid == 65534 && owner(open + "/made")?.gid == 65534)
            #expect(await thread.run { mkdir(closed + "/inside", 0o700) == 0 ? 0 : errno } == EACCES)
            #expect(await thread.run { Self.create(group + "/file") } == EACCES)
            #expect(symlink(closed, open + "/link") == 0)
            #expect(await thread.run { Self.create(open + "/link/file") } == EACCES && owner(closed + "/file") == nil)
            // This thread, and a thread with no identity, are still root.
            #expect(mkdir(closed + "/mine", 0o700) == 0 && owner(closed + "/mine")?.uid == 0)
            let plain = try IdentityThread(name: "plain", identity: nil)
            defer { plain.finish() }
            #expect(await plain.run { mkdir(closed + "/plain", 0o700) == 0 } == true && owner(closed + "/plain")?.uid == 0)
        }
    }

    @Test("it is the user only while a closure runs: no thread of the process is the user before or after")
    func onlyWhileRunning() async throws {
        let thread = try IdentityThread(name: "identity test", identity: nobody)
        defer { thread.finish() }
        let during = await thread.run { () -> [String: String] in
            Self.credentials((try? String(contentsOfFile: "/proc/thread-self/status", encoding: .utf8)) ?? "")
        }
        #expect(during?["Uid"]?.split(separator: "\t").last == "65534", "\(String(describing: during))")
        #expect(during?["Gid"]?.split(separator: "\t").last == "65534" && during?["Groups"] == "65534")
        // CAP_DAC_OVERRIDE (bit 1) and CAP_FOWNER (bit 3) are out of the effective set.
        let effective = UInt64(during?["CapEff"] ?? "", radix: 16) ?? ~0
        #expect(effective & 0b1010 == 0, "CapEff \(String(effective, radix: 16))")
        // Afterwards every thread of the process (the writer's included) is itself again:
        // a thread libdispatch starts from the writer when it resumes the caller is not the user.
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
        for task in tasks {
            guard let status = try? String(contentsOfFile: "/proc/self/task/\(task)/status", encoding: .utf8) else { continue }
            let lines = Self.credentials(status)
            #expect(lines["Uid"]?.contains("65534") == false && lines["Groups"]?.contains("65534") == false,
                    "thread \(task): \(lines)")
        }
    }

    @Test("once finished, a closure is not run at all (not on the caller's thread as root)")
    func finishedRunsNothing() async throws {
        let thread = try IdentityThread(name: "finished", identity: nobody)
        thread.finish()
        let ran = await thread.run { true }
        #expect(ran == nil)
    }
}
