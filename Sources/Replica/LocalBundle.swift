import Glibc
import Foundation
import SyncEngine

/// A bundle directory in the sync folder, walked with `lstat` (symlinks are members, never
/// followed). Its stat is what tells an unchanged bundle from a changed one: the inode of
/// its directory (so a renamed bundle is a move), the total bytes of its files, and, in the
/// mtime field, a digest of every member's path, kind, inode, size and mtime (files and
/// symlinks) — any member added, removed, renamed, rewritten or replaced changes it.
public struct LocalBundle: Sendable {
    /// One member as found.
    public struct Member: Hashable, Sendable {
        public var relativePath: String
        public var kind: ItemKind
        public var stat: LocalStat
        public var symlinkTarget: String?
    }

    public var members: [Member]
    public var stat: LocalStat
    /// Members that cannot be synced (names that are not UTF-8, devices), with why.
    public var skipped: [(path: String, reason: String)]
    /// Why the bundle could not be read whole (a member folder or member it cannot look
    /// at); nil when it was. A bundle read in part is unknown, never a new version.
    public var unreadable: String?

    /// Walks the bundle whose directory is `absolute` (at `path` in the sync folder); nil when
    /// no directory is there. A bundle is one document: every member is synced, whatever the
    /// domain's exclude patterns say (the server's listing shows them all, and a member left
    /// out would be deleted by the next version); only tidesync's own `.tidesync-*` names
    /// are not members.
    public static func scan(at absolute: String, path: RemotePath) -> LocalBundle? {
        guard let top = LocalScanner.entry(at: absolute, path: path), top.kind == .folder else { return nil }
        var members: [Member] = []
        var skipped: [(path: String, reason: String)] = []
        var unreadable: String?
        var folders: [(absolute: String, relative: String)] = [(absolute, "")]
        while unreadable == nil, let (folder, relativeFolder) = folders.popLast() {
            let names: [[UInt8]]
            switch LocalScanner.read(folder: folder) {
            case .names(let listed): names = listed
            case .gone: continue  // went away meanwhile: the bundle changed, and is looked at again
            case .unreadable(let reason):
                unreadable = "\(reason) (\(relativeFolder.isEmpty ? "the bundle's folder" : relativeFolder))"
                continue
            }
            for bytes in names {
                guard let name = String(validating: bytes, as: UTF8.self), (try? RemotePath.validate(name: name)) != nil else {
                    skipped.append((folder + "/" + String(decoding: bytes, as: UTF8.self), "the name is not valid UTF-8"))
                    continue
                }
                let relative = relativeFolder.isEmpty ? name : relativeFolder + "/" + name
                if name.hasPrefix(BundleManifest.scratchPrefix) { continue }
                let child = folder + "/" + name
                let entry: LocalScanEntry
                switch LocalScanner.lookUp(child, path: path) {
                case .found(let found): entry = found
                case .gone: continue
                case .unreadable(_, let reason):
                    unreadable = "\(reason) (\(relative))"
                    continue
                }
                members.append(Member(relativePath: relative, kind: entry.kind, stat: entry.stat, symlinkTarget: entry.symlinkTarget))
                if entry.kind == .folder { folders.append((child, relative)) }
            }
        }
        members.sort { $0.relativePath.utf8.lexicographicallyPrecedes($1.relativePath.utf8) }
        var digest: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ bytes: some Sequence<UInt8>) {
            for byte in bytes { digest = (digest ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        }
        var total: Int64 = 0
        for member in members {
            // A folder's own mtime only follows names in it, which the member list already
            // holds (and one of our temporaries coming and going must not count).
            let mtime = member.kind == .folder ? 0 : member.stat.modificationTimeNanoseconds
            mix(member.relativePath.utf8)
            mix("\u{0}\(member.kind.rawValue)\u{0}\(member.stat.inode)\u{0}\(member.stat.size)\u{0}\(mtime)\n".utf8)
            if member.kind == .file { total += member.stat.size }
        }
        let stat = LocalStat(inode: top.stat.inode, size: total, modificationTimeNanoseconds: Int64(bitPattern: digest >> 1))
        return LocalBundle(members: members, stat: stat, skipped: skipped, unreadable: unreadable)
    }

    /// The members as manifest rows, each file hashed — unless `previous` (the recorded
    /// manifest) holds it with the same local stat, whose hash is taken as it is.
    public func manifest(root absolute: String, previous: [BundleMember]) throws(ProviderError) -> [BundleMember] {
        var known: [RemotePath: BundleMember] = [:]
        for member in previous { if let path = try? member.relative { known[path] = member } }
        return try members.map { member throws(ProviderError) in
            var row = BundleMember(relativePath: member.relativePath, kind: member.kind,
                                   size: member.kind == .file ? member.stat.size : 0,
                                   symlinkTarget: member.symlinkTarget, local: member.stat)
            if member.kind == .file {
                if let before = known[try RemotePath(string: member.relativePath)], before.kind == .file,
                   before.local == member.stat, let hash = before.contentHash {
                    row.contentHash = hash
                } else {
                    do throws(ProviderError) {
                        row.contentHash = try LocalFolder.contentHash(ofFileAt: absolute + "/" + member.relativePath)
                    } catch {
                        throw ProviderError(.versionMismatch, "\(absolute)/\(member.relativePath) changed while it was read; it is looked at again",
                                            underlying: error.message)
                    }
                }
            }
            return row
        }
    }
}
