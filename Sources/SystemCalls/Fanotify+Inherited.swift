// A pre-content group handed over from an earlier run of the daemon (systemd's fd store,
// facts §0.2 and §1.8): its marks are still in place and readers that came while no daemon
// ran are queued, blocked, not reading zeros. Events the dead process had read are on the
// group's access list, answered by descriptor number only: they are answered before the
// first read, or an answer for a new event could reach a stale one of the same number and
// leave the new reader waiting (seen, facts §1.8).
import Glibc

extension PreContentGroup {
    /// Takes over `descriptor` (inherited from the service manager) as the group: it must be
    /// a fanotify group of class pre-content with an unlimited queue, as `init()` makes.
    /// Marks it close-on-exec (no child may keep a group alive, facts §1.8).
    public convenience init(inheriting descriptor: Int32) throws(Failure) {
        let flags = Self.fanotifyFlags(of: descriptor)
        guard let flags else {
            throw Failure(errno: EBADF, description: "descriptor \(descriptor) is not a fanotify group")
        }
        let classBits: UInt32 = 0x0c, classPreContent: UInt32 = 0x08, unlimitedQueue: UInt32 = 0x10
        guard flags & classBits == classPreContent, flags & unlimitedQueue != 0 else {
            throw Failure(errno: EINVAL, description: "the fanotify group in descriptor \(descriptor) is not a pre-content group "
                          + "with an unlimited queue (flags 0x\(String(flags, radix: 16)))")
        }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        self.init(adopting: descriptor)
    }

    /// The group flags the kernel shows in `/proc/self/fdinfo/<fd>` ("fanotify flags:10
    /// event-flags:…"), nil when `descriptor` is not a fanotify group.
    static func fanotifyFlags(of descriptor: Int32) -> UInt32? {
        var link = [CChar](repeating: 0, count: 64)
        let length = readlink("/proc/self/fd/\(descriptor)", &link, link.count - 1)
        guard length > 0, String(decoding: link.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "anon_inode:[fanotify]" else { return nil }
        guard let file = fopen("/proc/self/fdinfo/\(descriptor)", "r") else { return nil }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard text.hasPrefix("fanotify flags:") else { continue }
            let value = text.dropFirst("fanotify flags:".count).prefix { $0.isHexDigit }
            return UInt32(value, radix: 16)
        }
        return nil
    }

    /// Answers every event an earlier holder of the group read and left unanswered, by
    /// trying each descriptor number below `limit` with `response` (numbers with no such
    /// event are refused by the kernel, ENOENT). Call it before reading any event. The
    /// earlier process's bytes are gone with it, so the safe answer is an error (EAGAIN:
    /// the daemon is back, a retry is hydrated), never allow (zeros). Returns how many
    /// events were answered.
    @discardableResult
    public func answerStale(below limit: Int32, with response: Response = .deny(EAGAIN)) -> Int {
        var answered = 0
        for number in 0..<max(limit, 0) where respondIfOpen(to: number, response) { answered += 1 }
        return answered
    }

    /// The descriptor numbers a dead holder can have used: its limit of open files (the
    /// same unit, so the same limit as ours), at least 1024, at most 1 << 20.
    public static var staleNumberLimit: Int32 {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1 << 16 }
        return Int32(clamping: min(max(UInt64(limit.rlim_cur), 1024), 1 << 20))
    }
}
