import Glibc
import Foundation

// Durability: the verdict file is written to a temporary, fsynced and renamed into place;
// the folder is not fsynced (a verdict lost to a power cut only means the next start
// proves it again). One process per domain writes it (the domain lock), so the fixed
// temporary name is safe.

/// Keeps, between starts, what the write-guard probe proved about how a server writes a PUT
/// (atomically, or into the file as it arrives): proving "atomic" costs a PUT of 8 MiB and
/// a second or two (`WebDAVStore.decisiveLook`), which a `run --once` every few minutes or a
/// daemon restarted often should not pay each time. A verdict is used again only for the
/// same server (its URL and its `Server` header, which names its software and version: an
/// upgrade or another server behind the URL is probed anew) and for at most `lifetime`.
/// Only proven verdicts are kept, never "undecided". The file is one line of JSON, written
/// to a temporary and renamed into place; one that cannot be read is taken for none.
public struct PutVerdictMemory: Sendable {
    /// The file (`<state_dir>/<domain>.put-verdict`).
    public let path: String
    /// How long a verdict is used before the server is probed again.
    public static let lifetime: TimeInterval = 7 * 24 * 3600

    /// Keeps verdicts in the file at `path`; nothing is read or written until the probe asks.
    public init(path: String) {
        self.path = path
    }

    struct Verdict: Codable, Equatable {
        var origin: String
        var server: String
        var writesInPlace: Bool
        /// Seconds since 1970 when it was proven.
        var proven: Double
    }

    /// The kept verdict for `origin` (the base URL) and `server` (its `Server` header as the
    /// probe formats it), if one younger than `lifetime` is kept.
    func recall(origin: String, server: String, now: Date = Date()) -> Bool? {
        guard let data = FileManager.default.contents(atPath: path), data.count < 64 << 10,
              let verdict = try? JSONDecoder().decode(Verdict.self, from: data),
              verdict.origin == origin, verdict.server == server,
              now.timeIntervalSince1970 - verdict.proven < Self.lifetime,
              verdict.proven <= now.timeIntervalSince1970 + 60 else { return nil }
        return verdict.writesInPlace
    }

    /// Keeps a proven verdict; a failure to write it only means the next start probes again.
    func remember(_ writesInPlace: Bool, origin: String, server: String, now: Date = Date()) -> Bool {
        let verdict = Verdict(origin: origin, server: server, writesInPlace: writesInPlace, proven: now.timeIntervalSince1970)
        guard let data = try? JSONEncoder().encode(verdict) else { return false }
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == data.count, synced, rename(temporary, path) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }
}
