import Foundation

/// One member of a bundle's manifest: a file, folder or symlink below the bundle.
public struct BundleMember: Hashable, Sendable, Codable {
    /// The path below the bundle, `/`-separated, byte-exact.
    public var relativePath: String
    /// `file`, `folder` or `symlink`.
    public var kind: ItemKind
    /// Bytes of content; 0 for folders.
    public var size: Int64
    /// `sha256:<hex>` of a file's bytes; nil for folders and symlinks, and before hashing.
    public var contentHash: String?
    /// The member's version on the server when the bundle was last synced.
    public var remoteETag: ETag?
    /// For symlinks, the target as written.
    public var symlinkTarget: String?
    /// The member's local stat when the bundle was last synced (so an unchanged member is
    /// not hashed again).
    public var local: LocalStat?

    public init(relativePath: String, kind: ItemKind, size: Int64, contentHash: String? = nil, remoteETag: ETag? = nil,
                symlinkTarget: String? = nil, local: LocalStat? = nil) {
        self.relativePath = relativePath
        self.kind = kind
        self.size = size
        self.contentHash = contentHash
        self.remoteETag = remoteETag
        self.symlinkTarget = symlinkTarget
        self.local = local
    }

    /// The member's path below the bundle, as a path (compared by bytes, unlike `String`).
    public var relative: RemotePath {
        get throws(ProviderError) { try RemotePath(string: relativePath) }
    }

    /// The member's path below `bundle`.
    public func path(in bundle: RemotePath) throws(ProviderError) -> RemotePath {
        try RemotePath(bundle.components + relative.components)
    }
}

/// A bundle as the replica hands it to the engine: the directory holding it and its
/// members as scanned (hashed), plus a check that it is still what was scanned.
public struct BundleContents: Sendable {
    /// The bundle's directory; a member's bytes are at `directory/relativePath`.
    public var directory: URL
    public var members: [BundleMember]
    /// Throws `versionMismatch` when the bundle changed since its members were scanned; the
    /// engine calls it before a new version is put in place, so a bundle edited while it
    /// was uploaded is never published half old, half new.
    public var unchanged: @Sendable () throws(ProviderError) -> Void

    public init(directory: URL, members: [BundleMember],
                unchanged: @escaping @Sendable () throws(ProviderError) -> Void = {}) {
        self.directory = directory
        self.members = members
        self.unchanged = unchanged
    }
}

/// The bundle rules of the remote side: what a store's listing looks like once every
/// bundle is one entry, and the bundle version derived from its members' versions.
public enum BundleManifest {
    /// Names the engine uses for its own remote temporaries; never synced, whatever the
    /// exclude patterns say.
    public static let scratchPrefix = ".tidesync-"

    /// `entries` with every bundle as one entry of kind `bundle` (version derived from its
    /// members, size their total) and its members taken out, plus the members by bundle.
    /// The engine's own temporaries are left out; `swapping` holds the folders where a
    /// client has a bundle's old version set aside (`.tidesync-bundle-TOKEN-old`): a bundle
    /// missing from such a folder may be between the two moves of its replacement.
    public static func collapse(_ entries: [RemoteEntry], rule: BundleRule)
        -> (entries: [RemoteEntry], members: [RemotePath: [RemoteEntry]], swapping: Set<RemotePath>) {
        var kept: [RemoteEntry] = []
        var members: [RemotePath: [RemoteEntry]] = [:]
        var swapping: Set<RemotePath> = []
        kept.reserveCapacity(entries.count)
        for entry in entries {
            if entry.path.components.contains(where: { $0.hasPrefix(scratchPrefix) }) {
                if entry.path.name.hasPrefix(scratchPrefix + "bundle-"), entry.path.name.hasSuffix(asideSuffix) {
                    swapping.insert(entry.path.parent)
                }
                continue
            }
            if let bundle = rule.enclosingBundle(of: entry.path) {
                members[bundle, default: []].append(entry)
            } else {
                kept.append(entry)
            }
        }
        for index in kept.indices where kept[index].kind == .folder && rule.isBundle(name: kept[index].path.name) {
            let inside = members[kept[index].path] ?? []
            kept[index] = bundleEntry(kept[index], members: inside)
        }
        return (kept, members, swapping)
    }

    /// How the name of a bundle's old version set aside ends.
    public static let asideSuffix = "-old"

    /// How the name of an old version (a bundle's or a deleted folder's) ends once it has
    /// been checked and is being deleted: what is under such a name is only ever deleted,
    /// never put back, since a DELETE cut short may have removed part of it.
    public static let doomedSuffix = "-gone"


    /// The members of the bundle at `root` among `descendants` (everything the store lists
    /// below it): the engine's temporaries inside are not members.
    public static func members(of root: RemotePath, in descendants: [RemoteEntry]) -> [RemoteEntry] {
        let depth = root.components.count
        return descendants.filter { !$0.path.components.dropFirst(depth).contains { $0.hasPrefix(scratchPrefix) } }
    }

    /// The entry of the bundle whose root folder the store lists as `root`, holding `members`.
    public static func bundleEntry(_ root: RemoteEntry, members: [RemoteEntry]) -> RemoteEntry {
        var entry = root
        entry.kind = .bundle
        entry.size = members.reduce(0) { $0 + ($1.kind == .file ? $1.size : 0) }
        entry.etag = version(of: members, below: root.path)
        entry.symlinkTarget = nil
        return entry
    }

    /// The version of a bundle holding `members` (entries below `root`): a digest of every
    /// member's relative path, kind, size, version and target. Any change inside (a member
    /// added, removed, renamed or rewritten) gives another version; the same listing always
    /// gives the same one, whatever order the store lists it in.
    public static func version(of members: [RemoteEntry], below root: RemotePath) -> ETag {
        let depth = root.components.count
        let lines = members.map { member -> [UInt8] in
            let relative = member.path.components.dropFirst(depth).joined(separator: "/")
            let version = member.etag?.value
                ?? "m\(member.modificationDate.map { Int64($0.timeIntervalSince1970 * 1000) } ?? 0)"
            let fields = [relative, member.kind.rawValue, member.kind == .file ? String(member.size) : "0",
                          member.kind == .folder ? "" : version, member.symlinkTarget ?? ""]
            return Array(fields.joined(separator: "\u{0}").utf8) + [0x0A]
        }.sorted { $0.lexicographicallyPrecedes($1) }
        var digest = Digest128()
        for line in lines { digest.add(line) }
        return ETag(value: "bundle-\(members.count)-\(digest.hex)")
    }

    /// The entries of `listing` below `root` by their path relative to it.
    public static func relative(_ listing: [RemoteEntry], below root: RemotePath) -> [RemotePath: RemoteEntry] {
        var result: [RemotePath: RemoteEntry] = [:]
        for entry in listing where entry.path.components.count > root.components.count && entry.path.isDescendant(of: root) {
            if let path = entry.path.replacingPrefix(root, with: .root) { result[path] = entry }
        }
        return result
    }
}

/// Two FNV-1a 64-bit hashes with different seeds: a 128-bit digest for version strings
/// (not a security hash; the server's ETags are what it digests).
struct Digest128 {
    private var a: UInt64 = 0xcbf2_9ce4_8422_2325
    private var b: UInt64 = 0x6c62_272e_07bb_0142

    mutating func add(_ bytes: [UInt8]) {
        for byte in bytes {
            a = (a ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
            b = (b ^ UInt64(byte ^ 0x5A)) &* 0x0000_0100_0000_01B3
            b = (b << 7) | (b >> 57)
        }
    }

    var hex: String {
        func word(_ value: UInt64) -> String {
            let text = String(value, radix: 16)
            return String(repeating: "0", count: 16 - text.count) + text
        }
        return word(a) + word(b)
    }
}
