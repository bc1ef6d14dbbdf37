import Foundation

/// One synced folder: a `[[domain]]` table of the configuration file, validated.
public struct DomainConfiguration: Sendable, Equatable {
    /// The domain's name (`[A-Za-z0-9_-]{1,64}`), unique in the file; names the
    /// state database `<name>.sqlite` and the variable `TIDESYNC_PASSWORD_<NAME>`.
    public var name: String
    /// The local sync folder: absolute and standardised.
    public var localPath: String
    /// Where the other copy lives.
    public var remote: RemoteLocation
    /// The user name for the server, if any.
    public var username: String?
    /// Where the password comes from; read it with ``resolvePassword(environment:)``.
    public var credentials: CredentialSource
    /// Whether plain `http` to a host other than this machine was allowed explicitly.
    public var allowInsecureHTTP: Bool
    /// A PEM file of CA certificates trusted for this `https://` server besides the system's.
    public var caFile: String?
    /// The SHA-256 (lowercase hex) of the one self-signed certificate trusted for this server.
    public var certificateSHA256: String?
    /// How often the remote is polled for changes (default 30 s).
    public var pollInterval: Duration
    /// How long local changes settle before they are acted on (default 1 s).
    public var debounce: Duration
    /// How often the whole local folder is rescanned (default 1 h).
    public var rescanInterval: Duration
    /// How many transfers run at once, 1 to 64 (default 4).
    public var transfers: Int
    /// The most deletions one pass may make without confirmation (default 500).
    public var maxDelete: Int
    /// How long opening a connection to the server may take (default 15 s).
    public var connectTimeout: Duration
    /// Bytes per second below which a request is too slow (default 1 KiB); 0 turns the check off.
    public var lowSpeedLimit: ByteCount
    /// How long a request may stay below `lowSpeedLimit` before it is given up (default 30 s).
    public var lowSpeedTime: Duration
    /// Glob patterns of paths that are never synced, in addition to the built-in list.
    public var exclude: [String]
    /// Directory name extensions (without dots) whose directories sync as one item.
    public var bundleExtensions: [String]
    /// The dataless-placeholder settings.
    public var placeholders: PlaceholderSettings

    /// The extensions treated as bundles when `bundle_extensions` is not set.
    public static let defaultBundleExtensions = [
        "app", "bundle", "framework", "pages", "key", "numbers", "rtfd", "photoslibrary", "sparsebundle",
    ]

    /// Creates a domain with the documented defaults for everything not given.
    public init(
        name: String, localPath: String, remote: RemoteLocation, username: String? = nil,
        credentials: CredentialSource? = nil, allowInsecureHTTP: Bool = false,
        pollInterval: Duration = .seconds(30), debounce: Duration = .seconds(1),
        rescanInterval: Duration = .seconds(3600), transfers: Int = 4, maxDelete: Int = 500,
        connectTimeout: Duration = .seconds(15), lowSpeedLimit: ByteCount = ByteCount(1024),
        lowSpeedTime: Duration = .seconds(30), exclude: [String] = [], bundleExtensions: [String] = Self.defaultBundleExtensions,
        placeholders: PlaceholderSettings = PlaceholderSettings()
    ) {
        self.name = name
        self.localPath = localPath
        self.remote = remote
        self.username = username
        self.credentials = credentials ?? .environment(variable: Self.passwordVariable(forDomain: name))
        self.allowInsecureHTTP = allowInsecureHTTP
        self.pollInterval = pollInterval
        self.debounce = debounce
        self.rescanInterval = rescanInterval
        self.transfers = transfers
        self.maxDelete = maxDelete
        self.connectTimeout = connectTimeout
        self.lowSpeedLimit = lowSpeedLimit
        self.lowSpeedTime = lowSpeedTime
        self.exclude = exclude
        self.bundleExtensions = bundleExtensions
        self.placeholders = placeholders
    }

    /// The environment variable that holds the password when neither
    /// `password_command` nor `password_file` is set:
    /// `TIDESYNC_PASSWORD_<NAME>`, upper-cased, with `-` turned into `_`.
    public static func passwordVariable(forDomain name: String) -> String {
        "TIDESYNC_PASSWORD_" + name.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    /// Reads the password from its source now (it is never stored in the
    /// configuration); `nil` when the source is an unset environment variable.
    /// Runs `password_command` if that is the source, and may block while it runs.
    public func resolvePassword(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(PasswordError) -> Password? {
        try credentials.resolvePassword(environment: environment)
    }
}

/// Where a domain's remote copy lives.
public enum RemoteLocation: Sendable, Equatable, CustomStringConvertible {
    /// A WebDAV collection; the URL has scheme http or https, a host, no
    /// credentials, and a path ending in `/`.
    case webDAV(URL)
    /// A directory on this machine (a `file:` URL), as an absolute standardised path.
    case localDirectory(String)

    /// The URL or path, for logs.
    public var description: String {
        switch self {
        case .webDAV(let url): url.absoluteString
        case .localDirectory(let path): "file://" + path
        }
    }

    /// The location as the state DB records it, so that spellings of one remote compare
    /// equal: scheme and host in lower case, no default port (80 for http, 443 for https),
    /// the path as given (ending in `/`); `file://` and the standardised path of a directory.
    public var identity: String {
        switch self {
        case .localDirectory(let path):
            return "file://" + path
        case .webDAV(let url):
            guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url.absoluteString }
            components.scheme = components.scheme?.lowercased()
            components.host = components.host?.lowercased()
            if (components.scheme == "http" && components.port == 80) || (components.scheme == "https" && components.port == 443) {
                components.port = nil
            }
            return components.url?.absoluteString ?? url.absoluteString
        }
    }
}

extension DomainConfiguration {
    /// The remote as the state DB records it (`RemoteLocation.identity`) with the account in
    /// it (`https://alice@host/dav/`): most WebDAV servers serve every account under one
    /// URL, and the rows of one account read against another would look deleted.
    public var remoteIdentity: String {
        guard case .webDAV = remote, let username, !username.isEmpty,
              var components = URLComponents(string: remote.identity) else { return remote.identity }
        components.user = username
        return components.string ?? remote.identity
    }
}

/// The `[domain.placeholders]` table.
public struct PlaceholderSettings: Sendable, Equatable {
    /// Which files may stay dataless (default `.auto`: where fanotify pre-content
    /// events are unavailable every file comes down whole, and `status` says why).
    public var mode: PlaceholderMode
    /// With `.auto`, files smaller than this are always downloaded (default 16 MiB).
    public var minimumSize: ByteCount
    /// Byte ranges are hydrated in multiples of this power of two, at least
    /// 4 KiB (default 1 MiB).
    public var alignment: ByteCount
    /// Glob patterns of paths that are always downloaded.
    public var keepLocal: [String]
    /// How long a program reading a placeholder waits for its bytes before the read fails
    /// with EIO (default 30 s).
    public var hydrationTimeout: Duration
    /// Programs (by their process name, at most 15 characters as the kernel keeps it) that
    /// skip a file's holes without reading them: a placeholder they open is hydrated whole
    /// first, so their copy never holds silent zeros.
    public var hydrateOnOpen: [String]
    /// Programs (by process name) that may not hydrate: desktop indexers and file scanners
    /// that would pull a whole cloud folder down. Their reads of bytes a placeholder lacks
    /// fail (EPERM); bytes already here read as usual.
    public var denyHydration: [String]
    /// Thumbnails of image placeholders are made ahead into the freedesktop cache, from the
    /// preview the image carries or, below `thumbnailMaxFetch`, from the whole image
    /// (default on).
    public var thumbnails: Bool
    /// An image placeholder with no embedded preview is fetched whole for its thumbnail
    /// only when it is at most this large (default 8 MiB); larger ones get none.
    public var thumbnailMaxFetch: ByteCount
    /// The thumbnail cache (the folder holding `normal`, `large`...) to write to; nil: the
    /// one of the local folder's owner, `~/.cache/thumbnails` by the user database (the
    /// daemon's own `$XDG_CACHE_HOME/thumbnails` when it runs as that owner).
    public var thumbnailCache: String?

    /// The largest `thumbnail_max_fetch`: the whole image is held in memory to decode it.
    public static let thumbnailMaxFetchLimit = ByteCount(64 << 20)

    /// The programs that copy or archive by skipping holes (coreutils `cp`, `mv` to another
    /// file system, `install`; GNU and BSD `tar --sparse`; `rsync --sparse`).
    public static let holeSkippingPrograms = ["cp", "mv", "tar", "bsdtar", "install", "rsync"]

    /// The GNOME and KDE indexers and the `locate` database builders, as the kernel names
    /// their processes (cut to 15 bytes: `tracker-miner-fs-3` is `tracker-miner-f`,
    /// `tracker-extract-3` is `tracker-extract`, `baloo_file_extractor` is `baloo_file_extr`,
    /// mlocate's `updatedb.mlocate` is `updatedb.mlocat`).
    public static let indexers = ["tracker-miner-f", "tracker-extract", "baloo_file", "baloo_file_extr", "updatedb",
                                  "updatedb.mlocat", "updatedb.plocat", "plocate-build", "mlocate"]

    /// Creates placeholder settings; the defaults are those of the file format.
    public init(
        mode: PlaceholderMode = .auto, minimumSize: ByteCount = ByteCount(16 << 20),
        alignment: ByteCount = ByteCount(1 << 20), keepLocal: [String] = [],
        hydrationTimeout: Duration = .seconds(30), hydrateOnOpen: [String] = PlaceholderSettings.holeSkippingPrograms,
        denyHydration: [String] = PlaceholderSettings.indexers, thumbnails: Bool = true,
        thumbnailMaxFetch: ByteCount = ByteCount(8 << 20), thumbnailCache: String? = nil
    ) {
        self.mode = mode
        self.minimumSize = minimumSize
        self.alignment = alignment
        self.keepLocal = keepLocal
        self.hydrationTimeout = hydrationTimeout
        self.hydrateOnOpen = hydrateOnOpen
        self.denyHydration = denyHydration
        self.thumbnails = thumbnails
        self.thumbnailMaxFetch = thumbnailMaxFetch
        self.thumbnailCache = thumbnailCache
    }
}

/// Which remote files are kept as dataless placeholders until read.
public enum PlaceholderMode: String, Sendable, CaseIterable {
    /// Every file is downloaded in full.
    case off
    /// Files of at least `min_size` bytes start dataless.
    case auto
    /// Every file starts dataless.
    case all
}
