import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The private Apache mod_dav that `packaging/test.sh` starts on 127.0.0.1 (see
/// `packaging/dav-server.sh`), as the script's environment describes it. Two shares: one
/// with `DavDepthInfinity Off` (the default, listings walk) and one with it on. Every value
/// is nil (or `configured` false) when the script did not start it.
public enum TestApache {
    /// The environment of the test process, read once.
    public static let environment = ProcessInfo.processInfo.environment

    /// True when the share with `DavDepthInfinity Off` is running.
    public static var configured: Bool { environment["TIDESYNC_TEST_DAV_URL"] != nil }
    /// True when the share with `DavDepthInfinity On` is running.
    public static var depthInfinityConfigured: Bool { environment["TIDESYNC_TEST_DAV_INF_URL"] != nil }

    /// The base URL of the `DavDepthInfinity Off` share, ending in `/`.
    public static var urlText: String? { environment["TIDESYNC_TEST_DAV_URL"] }
    /// The base URL of the `DavDepthInfinity On` share, ending in `/`.
    public static var depthInfinityURLText: String? { environment["TIDESYNC_TEST_DAV_INF_URL"] }
    /// `urlText` as a URL.
    public static var url: URL? { urlText.flatMap { URL(string: $0) } }
    /// `depthInfinityURLText` as a URL.
    public static var depthInfinityURL: URL? { depthInfinityURLText.flatMap { URL(string: $0) } }
    /// The folder on this machine that the `DavDepthInfinity Off` share serves.
    public static var diskRoot: String? { environment["TIDESYNC_TEST_DAV_ROOT"] }
    /// The folder on this machine that the `DavDepthInfinity On` share serves.
    public static var depthInfinityDiskRoot: String? { environment["TIDESYNC_TEST_DAV_INF_ROOT"] }
    /// The test account's user name.
    public static var user: String? { environment["TIDESYNC_TEST_DAV_USER"] }
    /// The test account's password.
    public static var password: String? { environment["TIDESYNC_TEST_DAV_PASSWORD"] }
    /// The user Apache runs as; a folder made for it by root must be given to it.
    public static var owner: String? { environment["TIDESYNC_TEST_DAV_OWNER"] }
    /// Apache's access log, one line per request.
    public static var accessLog: String? { environment["TIDESYNC_TEST_DAV_ACCESS_LOG"] }

    /// Makes `disk` (a new collection's folder below a disk root) Apache's own when the
    /// test runs as root, so Apache can write in it; nothing otherwise.
    public static func giveToServer(_ disk: String) throws {
        guard getuid() == 0, let owner else { return }
        try FileManager.default.setAttributes([.ownerAccountName: owner, .groupOwnerAccountName: owner], ofItemAtPath: disk)
    }
}

/// The private `rclone serve webdav` of a local folder that `packaging/test.sh` starts on
/// 127.0.0.1 when rclone is installed (see `packaging/rclone-dav.sh`).
public enum TestRclone {
    /// True when the server is running.
    public static var configured: Bool { TestApache.environment["TIDESYNC_TEST_RCLONE_URL"] != nil }
    /// Its base URL, ending in `/`.
    public static var urlText: String? { TestApache.environment["TIDESYNC_TEST_RCLONE_URL"] }
    /// `urlText` as a URL.
    public static var url: URL? { urlText.flatMap { URL(string: $0) } }
    /// The test account's user name.
    public static var user: String? { TestApache.environment["TIDESYNC_TEST_RCLONE_USER"] }
    /// The test account's password.
    public static var password: String? { TestApache.environment["TIDESYNC_TEST_RCLONE_PASSWORD"] }
    /// The folder on this machine that it serves.
    public static var diskRoot: String? { TestApache.environment["TIDESYNC_TEST_RCLONE_ROOT"] }
}

/// One of the other private WebDAV servers `packaging/test.sh` starts on 127.0.0.1 when
/// it is installed: nginx (`packaging/nginx-dav.sh`), lighttpd (`lighttpd-dav.sh`) and
/// WsgiDAV (`wsgidav-dav.sh`). Each script exports `TIDESYNC_TEST_<NAME>_URL`, `_USER`,
/// `_PASSWORD`, `_ROOT` and `_ACCESS_LOG`; every value is nil when it did not start.
public struct TestDAVServer: Sendable, Hashable {
    /// The name in the environment variables: `NGINX`, `LIGHTTPD`, `WSGIDAV`.
    public let name: String

    public init(name: String) { self.name = name }

    public static let nginx = TestDAVServer(name: "NGINX")
    public static let lighttpd = TestDAVServer(name: "LIGHTTPD")
    public static let wsgidav = TestDAVServer(name: "WSGIDAV")
    /// rclone's (`TestRclone`), through the same variables.
    public static let rclone = TestDAVServer(name: "RCLONE")

    func value(_ suffix: String) -> String? { TestApache.environment["TIDESYNC_TEST_\(name)_\(suffix)"] }

    /// True when the server is running.
    public var configured: Bool { value("URL") != nil }
    /// Its base URL, ending in `/`.
    public var urlText: String? { value("URL") }
    /// `urlText` as a URL.
    public var url: URL? { urlText.flatMap { URL(string: $0) } }
    /// The test account's user name.
    public var user: String? { value("USER") }
    /// The test account's password.
    public var password: String? { value("PASSWORD") }
    /// The folder on this machine that it serves.
    public var diskRoot: String? { value("ROOT") }
    /// Its log of requests, one line each (WsgiDAV: its log, whose request lines name the method).
    public var accessLog: String? { value("ACCESS_LOG") }
}
