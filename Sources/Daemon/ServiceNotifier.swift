import Glibc
import Control
import SyncModel
import Foundation

/// Tells systemd how the service is doing (sd_notify's protocol, without libsystemd): one
/// datagram per message to the Unix socket named by `$NOTIFY_SOCKET` (a path, or an abstract
/// name when it starts with "@"). Without `$NOTIFY_SOCKET` every call does nothing.
public struct ServiceNotifier: Sendable {
    /// The socket's address, as given.
    public let socketName: String?

    /// How long one message may wait for room at the receiver.
    static let sendTimeout = Duration.seconds(1)

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        socketName = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Sends `message` ("READY=1", "STATUS=Synced", …) with `descriptors` attached
    /// (SCM_RIGHTS, as sd_pid_notify_with_fds sends them: "FDSTORE=1" asks the manager to
    /// keep them); false when it could not be sent.
    @discardableResult
    public func send(_ message: String, descriptors: [Int32] = []) -> Bool {
        guard let socketName, var address = Self.address(socketName) else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        // A receiver that does not read (its queue holds 10 datagrams by default,
        // net.unix.max_dgram_qlen) must not hold the daemon: a stop waited for ever in
        // sendmsg. A second is plenty for systemd; then the message is given up.
        var limit = timeval(tv_sec: Int(Self.sendTimeout.components.seconds), tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var payload = Array(message.utf8)
        let count = payload.count
        // cmsghdr (16 bytes on 64-bit Linux) then the descriptors, padded to 8 bytes.
        var control = [UInt8](repeating: 0, count: descriptors.isEmpty ? 0 : 16 + (descriptors.count * 4 + 7) / 8 * 8)
        if !descriptors.isEmpty { Self.fillRights(&control, descriptors) }
        let sent = payload.withUnsafeMutableBytes { bytes in
            control.withUnsafeMutableBytes { controlBytes in
                withUnsafeMutablePointer(to: &address.address) { name in
                    var vector = iovec(iov_base: bytes.baseAddress, iov_len: bytes.count)
                    return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                        var header = msghdr(msg_name: UnsafeMutableRawPointer(name), msg_namelen: address.length,
                                            msg_iov: vectorPointer, msg_iovlen: 1,
                                            msg_control: controlBytes.isEmpty ? nil : controlBytes.baseAddress,
                                            msg_controllen: controlBytes.count, msg_flags: 0)
                        return sendmsg(fd, &header, Int32(MSG_NOSIGNAL))
                    }
                }
            }
        }
        return sent == count
    }

    /// The socket address of `name` (a path, or an abstract name after "@"), nil when too long.
    private static func address(_ name: String) -> (address: sockaddr_un, length: socklen_t)? {
        var bytes = Array(name.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        // Abstract names are exactly as long as given; paths end with their NUL.
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + (bytes[0] == 0 ? 0 : 1))
        return (address, length)
    }

    /// Writes an SCM_RIGHTS control message carrying `descriptors` into `control`.
    private static func fillRights(_ control: inout [UInt8], _ descriptors: [Int32]) {
        control.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: 16 + descriptors.count * 4, toByteOffset: 0, as: Int.self)  // cmsg_len
            raw.storeBytes(of: SOL_SOCKET, toByteOffset: 8, as: Int32.self)                // cmsg_level
            raw.storeBytes(of: Int32(SCM_RIGHTS), toByteOffset: 12, as: Int32.self)        // cmsg_type
            for (index, descriptor) in descriptors.enumerated() {
                raw.storeBytes(of: descriptor, toByteOffset: 16 + index * 4, as: Int32.self)
            }
        }
    }
}

/// The short line systemd shows for the service (`systemctl --user status tidesync`), decided
/// from the domains' states alone.
public enum ServiceStatusLine {
    /// "Synced", "Uploading 3 files", "Paused: server unreachable", …; the worst domain wins,
    /// prefixed with its name when there are several.
    public static func text(for domains: [(name: String, snapshot: DomainMonitor.Snapshot)]) -> String {
        let lines = domains.map { (name: $0.name, line: line(for: $0.snapshot)) }
        guard let worst = lines.max(by: { $0.line.rank < $1.line.rank }) else { return "No domains" }
        return domains.count > 1 && worst.line.rank > 0 ? "\(worst.name): \(worst.line.text)" : worst.line.text
    }

    static func line(for snapshot: DomainMonitor.Snapshot) -> (rank: Int, text: String) {
        if snapshot.paused { return (2, "Paused") }
        switch snapshot.phase {
        case .starting: return (1, "Starting")
        case .parked(let error, _, _): return (3, "Paused: " + phrase(error.code))
        case .idle where snapshot.pending.isEmpty: return (0, "Synced")
        case .idle, .syncing: return (1, activity(snapshot.pending))
        }
    }

    /// "Uploading 3 files", "Downloading 1 file", "Syncing 12 items".
    static func activity(_ pending: [DomainMonitor.PendingStep]) -> String {
        let uploads = pending.filter { $0.step.direction == .upload }.count
        let downloads = pending.filter { $0.step.direction == .download }.count
        func files(_ count: Int) -> String { count == 1 ? "1 file" : "\(count) files" }
        if uploads > 0, downloads == 0, uploads == pending.count { return "Uploading " + files(uploads) }
        if downloads > 0, uploads == 0, downloads == pending.count { return "Downloading " + files(downloads) }
        if pending.isEmpty { return "Syncing" }
        return pending.count == 1 ? "Syncing 1 item" : "Syncing \(pending.count) items"
    }

    static func phrase(_ code: ProviderError.Code) -> String {
        switch code {
        case .serverUnreachable: "server unreachable"
        case .serverFailedItem: "server failing requests"
        case .notAuthenticated: "not authenticated"
        case .serverNotTrusted: "server certificate not trusted"
        case .insufficientQuota: "server quota exceeded"
        case .localDiskFull: "local disk full"
        case .massDeletePaused: "mass delete needs confirmation"
        default: "cannot sync (\(code.rawValue))"
        }
    }
}
