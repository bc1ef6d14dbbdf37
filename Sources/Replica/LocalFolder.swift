// The sync folder and the names of what it holds: its items and the temporaries of
// downloads. The rest are extensions, one idea a file: guarded writes (`+GuardedWrites`,
// `+Replace`, `+Bundles`), reading contents (`+Contents`), writer checks (`+Writers`),
// errno mapping (`+Errors`) and folded names (`+FoldedNames`).
import ContentHash
import Foundation
import SyncEngine

/// The sync folder, as the reconciliation writes to it. Every write is guarded by what the
/// plan saw (a stat, or "nothing here"): when the user changed something meanwhile, the
/// write fails with `versionMismatch` and leaves it alone, and the next plan decides again.
public struct LocalFolder: Sendable {
    /// The sync folder, absolute, without a trailing slash.
    public let root: String
    /// Bundles are one item: looked at, replaced and deleted whole.
    public let bundles: BundleRule

    public init(root: String, bundles: BundleRule = .standard) {
        self.root = root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root
        self.bundles = bundles
    }

    /// The prefix of the temporary files downloads are written to.
    public static let temporaryPrefix = ".tidesync-part-"

    /// True for a name this folder gives its temporaries: the prefix and a UUID.
    public static func isTemporary(_ name: String) -> Bool {
        name.hasPrefix(temporaryPrefix) && UUID(uuidString: String(name.dropFirst(temporaryPrefix.count))) != nil
    }

    public func absolute(_ path: RemotePath) -> String {
        path.isRoot ? root : root + "/" + path.components.joined(separator: "/")
    }

    /// What is at `path` now (lstat), or nil; a bundle as one item with its `LocalBundle` stat.
    public func entry(at path: RemotePath) -> LocalScanEntry? {
        guard let entry = LocalScanner.entry(at: absolute(path), path: path) else { return nil }
        guard entry.kind == .folder, bundles.isBundle(name: path.name), bundles.enclosingBundle(of: path) == nil,
              let bundle = LocalBundle.scan(at: absolute(path), path: path) else { return entry }
        return LocalScanEntry(path: path, kind: .bundle, stat: bundle.stat)
    }

    /// The bundle at `path` as it is now, walked; nil when no bundle is there.
    public func bundle(at path: RemotePath) -> LocalBundle? {
        LocalBundle.scan(at: absolute(path), path: path)
    }

    /// A fresh temporary file name in the folder of `path` (nothing is created).
    public func temporaryURL(beside path: RemotePath) -> URL {
        URL(fileURLWithPath: absolute(path.parent) + "/" + Self.temporaryPrefix + UUID().uuidString)
    }

    /// The temporary file a download of `version` of `path` is written to, found again by
    /// the next attempt to resume it: `.tidesync-part-` and a name-based (version 5) UUID
    /// from a SHA-256 of the name and the version. A fresh temporary is a random (version 4)
    /// UUID, so `isResumablePart` tells the two apart; another version gets another name.
    public func partURL(beside path: RemotePath, version: ETag) -> URL {
        var digest = ContentDigest(.sha256)
        digest.update(Array("tidesync-part\u{0}\(path.name)\u{0}\(version.value)".utf8))
        var bytes = digest.bytes()
        bytes[6] = bytes[6] & 0x0F | 0x50
        bytes[8] = bytes[8] & 0x3F | 0x80
        let uuid = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                               bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
        return URL(fileURLWithPath: absolute(path.parent) + "/" + Self.temporaryPrefix + uuid.uuidString)
    }

    /// True for a part a download may resume (`partURL`), false for a fresh temporary.
    public static func isResumablePart(_ name: String) -> Bool {
        guard isTemporary(name) else { return false }
        let token = name.dropFirst(temporaryPrefix.count)
        return token[token.index(token.startIndex, offsetBy: 14)] == "5"
    }
}
