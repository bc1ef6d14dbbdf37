#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Names of the store's temporary files: `.tidesync-tmp-HOST-PID-RANDOM`. The host and
/// pid let a later walk tell a crashed writer's leftovers from a live writer's file.
enum TemporaryName {
    static let prefix = ".tidesync-tmp-"

    static let hostName: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, buffer.count - 1)
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.replacingOccurrences(of: "-", with: "_")
    }()

    /// A fresh temporary name for this process.
    static func make() -> String {
        "\(prefix)\(hostName)-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
    }

    /// Removes `directory/name` when it is a temporary of a process of this host that
    /// no longer runs. Other hosts' temporaries are left alone.
    static func removeIfStale(name: String, in directory: String) {
        guard name.hasPrefix(prefix) else { return }
        let parts = name.dropFirst(prefix.count).split(separator: "-")
        guard parts.count == 3, String(parts[0]) == hostName, let pid = pid_t(parts[1]) else { return }
        guard pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { return }
        let path = directory + "/" + name
        if unlink(path) != 0, errno == EISDIR {
            try? FileManager.default.removeItem(atPath: path)
        }
    }
}
