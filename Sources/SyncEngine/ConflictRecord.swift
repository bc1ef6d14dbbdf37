import Foundation

/// One conflict copy that was made: both sides changed `original`, and this machine's
/// version was kept beside it as `copy` (DESIGN.md, "Conflicts"). Recorded in the state DB
/// for `tidesync conflicts` and the conflict count of `tidesync status`.
public struct ConflictRecord: Hashable, Sendable, Codable {
    /// The path both sides changed; the remote version keeps this name.
    public var original: RemotePath
    /// Where this machine's version was kept, on both sides.
    public var copy: RemotePath
    /// The kind of this machine's item.
    public var kind: ItemKind
    /// When the plan found the conflict.
    public var detectedAt: Date
    /// The version both sides last agreed on; nil when the local item was new.
    public var baseVersion: ETag?
    /// The remote version that keeps the original name; nil when it is not a file.
    public var remoteVersion: ETag?
    /// This machine's version as it was found: size in bytes and modification time.
    public var local: LocalStat

    /// A record with every field given.
    public init(original: RemotePath, copy: RemotePath, kind: ItemKind, detectedAt: Date, baseVersion: ETag?,
                remoteVersion: ETag?, local: LocalStat) {
        self.original = original
        self.copy = copy
        self.kind = kind
        self.detectedAt = detectedAt
        self.baseVersion = baseVersion
        self.remoteVersion = remoteVersion
        self.local = local
    }

    /// The record of the conflict copy `conflict`.
    public init(_ conflict: ConflictCopy) {
        self.init(original: conflict.path, copy: conflict.copy, kind: conflict.kind, detectedAt: conflict.detectedAt,
                  baseVersion: conflict.baseVersion, remoteVersion: conflict.remoteVersion, local: conflict.local)
    }
}
