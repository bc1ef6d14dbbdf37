import Foundation
import TestSupport

/// A private server packaging/test.sh starts, as the two-client test uses it: a new
/// collection on it, its account, and how many seeds it runs by default.
enum TwoClientServer: String, CaseIterable, Sendable {
    case apache, rclone, nginx, lighttpd, wsgidav

    /// nginx, lighttpd and WsgiDAV as TestSupport describes them; nil for Apache and rclone.
    var other: TestDAVServer? {
        switch self {
        case .apache, .rclone: nil
        case .nginx: .nginx
        case .lighttpd: .lighttpd
        case .wsgidav: .wsgidav
        }
    }

    /// True when packaging/test.sh started it (Apache: its `DavDepthInfinity On` share).
    var configured: Bool {
        switch self {
        case .apache: TestApache.depthInfinityConfigured
        case .rclone: TestRclone.configured
        case .nginx, .lighttpd, .wsgidav: other!.configured
        }
    }

    var user: String? {
        switch self {
        case .apache: TestApache.user
        case .rclone: TestRclone.user
        case .nginx, .lighttpd, .wsgidav: other!.user
        }
    }

    var password: String? {
        switch self {
        case .apache: TestApache.password
        case .rclone: TestRclone.password
        case .nginx, .lighttpd, .wsgidav: other!.password
        }
    }

    /// True where a file's version is its time in seconds and its size (nginx; WsgiDAV's
    /// ETag adds only the inode, which its in-place PUT keeps): a second write of the same
    /// size within a second is not a new version there.
    var versionsAreSecondsAndSize: Bool { self == .nginx || self == .wsgidav }

    /// Five seeds on Apache, two on each other server: the suite's wall time stays
    /// reasonable (each seed is 10-20 s of two daemons).
    var defaultSeeds: String { self == .apache ? "7,1207,90210,4242,31337" : "7,1207" }

    /// A new empty collection: its URL (ending in `/`) and the folder on this machine it
    /// is; nil when the server is not running.
    func newCollection() throws -> (url: String, disk: String)? {
        if self == .apache { return try DaemonFixture.sharedApacheCollection() }
        let base: String?, root: String?
        switch self {
        case .apache: return nil
        case .rclone: (base, root) = (TestRclone.urlText, TestRclone.diskRoot)
        case .nginx, .lighttpd, .wsgidav: (base, root) = (other!.urlText, other!.diskRoot)
        }
        guard let base, let root else { return nil }
        let name = "2c-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: root + "/" + name, withIntermediateDirectories: true)
        return (base + name + "/", root + "/" + name)
    }
}
