import Glibc
import Foundation

/// The processes that hold a file open for writing, found in `/proc`, so that a message
/// about a file sync waits for can say who holds it ("open for writing (by soffice, pid
/// 4121)"). Only processes this user may look at are seen (all of them for root); a
/// writer through a shared `mmap` has no descriptor and is not found.
public enum OpenWriters {
    public struct Writer: Sendable, Equatable, CustomStringConvertible {
        public let pid: Int32
        public let command: String
        /// The file it holds open for writing.
        public let path: String

        public var description: String { "\(command), pid \(pid)" }
    }

    /// The writers of the file at `path` or, for a folder, of any file below it; at most
    /// `limit` of them. Costs a look at every descriptor of every process: for messages,
    /// not for every pass.
    /// With `writersOnly` false, every process holding it open is found (readers too).
    public static func find(at given: String, limit: Int = 8, writersOnly: Bool = true) -> [Writer] {
        // The kernel names open files by their real path (no symlinks on the way).
        let path = given.withCString { realpath($0, nil) }.map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        } ?? given
        let prefix = path.hasSuffix("/") ? path : path + "/"
        guard let processes = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        var found: [Writer] = []
        let own = getpid()
        for name in processes {
            guard let pid = Int32(name), pid != own else { continue }
            let fds = "/proc/\(pid)/fd"
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: fds) else { continue }
            for fd in entries {
                guard let target = link(fds + "/" + fd), target == path || target.hasPrefix(prefix),
                      !writersOnly || isWritable(pid: pid, fd: fd) else { continue }
                found.append(Writer(pid: pid, command: command(of: pid), path: target))
                if found.count >= limit { return found }
            }
        }
        return found
    }

    /// "soffice, pid 4121" for the writers of `path`, or nil when none is seen.
    public static func describe(at path: String, writersOnly: Bool = true) -> String? {
        let writers = find(at: path, writersOnly: writersOnly)
        guard !writers.isEmpty else { return nil }
        var seen = Set<Int32>()
        return writers.filter { seen.insert($0.pid).inserted }.map(\.description).joined(separator: "; ")
    }

    static func link(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The descriptor's open flags (octal, in `fdinfo`) say write-only or read-write.
    static func isWritable(pid: Int32, fd: String) -> Bool {
        guard let info = try? String(contentsOfFile: "/proc/\(pid)/fdinfo/\(fd)", encoding: .utf8),
              let line = info.split(separator: "\n").first(where: { $0.hasPrefix("flags:") }),
              let flags = Int32(line.dropFirst("flags:".count).trimmingCharacters(in: .whitespaces), radix: 8) else { return false }
        return flags & O_ACCMODE != O_RDONLY
    }

    static func command(of pid: Int32) -> String {
        let name = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return name.flatMap { $0.isEmpty ? nil : $0 } ?? "process"
    }
}
