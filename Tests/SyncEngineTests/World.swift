import Foundation
import SyncEngine

/// `p("a/b")`: a RemotePath literal for tests.
func p(_ text: String) -> RemotePath { try! RemotePath(string: text) }

/// A small world for reconciliation tests: the base rows and what each side holds,
/// built by path. Ids are `id-<path at the last sync>`; every synced item has its own
/// inode, ETag and file id, and both sides hold it as the base says.
struct World: Sendable {
    /// 2026-11-22 13:45:01 UTC.
    static let now = Date(timeIntervalSince1970: 1_795_355_101)
    static let host = "laptop"
    static let utc = TimeZone(identifier: "UTC")!

    var base: [ItemRecord] = []
    var local: [RemotePath: LocalObservation] = [:]
    var remote: [RemotePath: RemoteEntry] = [:]
    /// When false, remote entries carry no file id (a WebDAV server without `oc:fileid`).
    var fileIDs = true
    private var counter: UInt64 = 100

    init(fileIDs: Bool = true) { self.fileIDs = fileIDs }

    /// Adds an item both sides hold as recorded at the last sync.
    mutating func synced(_ text: String, _ kind: ItemKind = .file, size: Int64 = 10, target: String? = nil) {
        let path = p(text)
        counter += 1
        let size = kind == .folder ? 0 : size
        let stat = LocalStat(inode: counter, size: size, modificationTimeNanoseconds: 1_000_000)
        let etag = ETag(value: "e\(counter)")
        base.append(ItemRecord(id: id(text), parentID: path.parent.isRoot ? .root : id(path.parent.description),
                               name: path.name, kind: kind, size: size, remoteETag: etag, remoteFileID: "f\(counter)",
                               symlinkTarget: target, local: stat))
        local[path] = LocalObservation(kind: kind, size: size, stat: stat, symlinkTarget: target)
        remote[path] = RemoteEntry(path: path, kind: kind, size: size, etag: etag,
                                   fileID: fileIDs ? "f\(counter)" : nil, symlinkTarget: target)
    }

    func id(_ text: String) -> ItemIdentifier { ItemIdentifier("id-\(p(text))") }
    func record(_ text: String) -> ItemRecord { base.first { $0.id == id(text) }! }
    func baseETag(_ text: String) -> ETag { record(text).remoteETag! }
    func stat(_ text: String) -> LocalStat { local[p(text)]!.stat }
    func entry(_ text: String) -> RemoteEntry { remote[p(text)]! }
    func etag(_ text: String) -> ETag { entry(text).etag! }

    // MARK: Local changes

    /// Writes the file in place: a later mtime, optionally a new size.
    mutating func editLocal(_ text: String, size: Int64? = nil) {
        var seen = local[p(text)]!
        if let size { seen.size = size; seen.stat.size = size }
        seen.stat.modificationTimeNanoseconds += 1_000_000_000
        local[p(text)] = seen
    }

    /// Replaces the file by an atomic save that kept size and mtime: only the inode differs.
    mutating func replaceLocal(_ text: String) {
        counter += 1
        local[p(text)]!.stat.inode = counter
    }

    mutating func createLocal(_ text: String, _ kind: ItemKind = .file, size: Int64 = 10, target: String? = nil) {
        counter += 1
        let size = kind == .folder ? 0 : size
        local[p(text)] = LocalObservation(kind: kind, size: size,
                                          stat: LocalStat(inode: counter, size: size, modificationTimeNanoseconds: 5_000_000),
                                          symlinkTarget: target)
    }

    mutating func deleteLocal(_ text: String) { local = local.filter { !$0.key.isDescendant(of: p(text)) } }

    mutating func moveLocal(_ from: String, _ to: String) {
        local = Dictionary(uniqueKeysWithValues: local.map { (Self.rebase($0.key, p(from), p(to)), $0.value) })
    }

    // MARK: Remote changes

    /// Another client wrote the file: a new ETag, optionally a new size.
    mutating func editRemote(_ text: String, size: Int64? = nil) {
        counter += 1
        remote[p(text)]!.etag = ETag(value: "e\(counter)")
        if let size { remote[p(text)]!.size = size }
    }

    mutating func createRemote(_ text: String, _ kind: ItemKind = .file, size: Int64 = 10, target: String? = nil) {
        counter += 1
        let size = kind == .folder ? 0 : size
        remote[p(text)] = RemoteEntry(path: p(text), kind: kind, size: size, etag: ETag(value: "e\(counter)"),
                                      fileID: fileIDs ? "f\(counter)" : nil, symlinkTarget: target)
    }

    mutating func deleteRemote(_ text: String) { remote = remote.filter { !$0.key.isDescendant(of: p(text)) } }

    mutating func moveRemote(_ from: String, _ to: String) {
        remote = Dictionary(uniqueKeysWithValues: remote.map { path, entry in
            var moved = entry
            moved.path = Self.rebase(path, p(from), p(to))
            return (moved.path, moved)
        })
    }

    // MARK: Planning

    func plan() -> [SyncAction] {
        Reconciler.plan(base: base, local: local, remote: remote, now: Self.now, host: Self.host, timeZone: Self.utc)
    }

    /// The conflict-copy name the plan gives `name` when nothing else is taken.
    static func copyName(_ name: String, counter: Int = 1) -> String {
        var taken: Set<String> = []
        for _ in 1..<counter {
            taken.insert(ConflictName.make(for: name, date: now, host: host, timeZone: utc, taken: taken))
        }
        return ConflictName.make(for: name, date: now, host: host, timeZone: utc, taken: taken)
    }

    static func rebase(_ path: RemotePath, _ from: RemotePath, _ to: RemotePath) -> RemotePath {
        guard path.isDescendant(of: from) else { return path }
        return try! RemotePath(to.components + path.components.dropFirst(from.components.count))
    }
}
