/// The base (the state DB's rows) as a tree with paths derived from parent chains.
/// Records are addressed by index, parents before children (sorted by path), so the
/// planner's per-item tables are arrays rather than dictionaries.
/// The state DB's rows as a tree, built once per pass and shared by the remote walk's
/// comparison and the plan: each row with its path at the last sync, in path order.
public struct RecordTree: Sendable {
    /// The rows as read (the root's included).
    public let base: [ItemRecord]
    let tree: BaseTree

    public init(_ base: [ItemRecord]) {
        self.base = base
        tree = BaseTree(base)
    }

    /// The root folder's row, when there is one.
    public var root: ItemRecord? { base.first { $0.id == .root } }
}

struct BaseTree {
    private(set) var records: [ItemRecord] = []
    /// Each record's path at the last sync.
    private(set) var paths: [RemotePath] = []
    /// Each record's parent index; nil when the parent is the root.
    private(set) var parents: [Int?] = []

    var indices: Range<Int> { records.indices }

    /// Rows whose parent chain does not reach the root (or loops) are left out: the
    /// items they described show up as new on whichever side still has them. Built by
    /// walking down from the root with each folder's children in name order (UTF-8 bytes),
    /// which is `RemotePath.precedes` order without sorting whole paths (a folder holds
    /// each name once, as the schema's UNIQUE (parent_id, name) keeps it).
    init(_ base: [ItemRecord]) {
        var byID: [ItemIdentifier: Int] = [:]
        byID.reserveCapacity(base.count)
        for (index, record) in base.enumerated() where record.id != .root && record.parentID != nil { byID[record.id] = index }
        var children: [ItemIdentifier: [Int]] = [:]
        for index in byID.values { children[base[index].parentID!, default: []].append(index) }
        records.reserveCapacity(byID.count)
        paths.reserveCapacity(byID.count)
        parents.reserveCapacity(byID.count)
        // Depth first, each folder's children pushed in reverse name order so they come off
        // in name order; a folder's own index is the parent of what is pushed below it.
        var stack: [(row: Int, parent: Int?, parentPath: RemotePath)] = []
        func push(_ id: ItemIdentifier, parent: Int?, path: RemotePath) {
            guard let rows = children.removeValue(forKey: id) else { return }
            let sorted = rows.sorted { base[$0].name.utf8.lexicographicallyPrecedes(base[$1].name.utf8) }
            for row in sorted.reversed() { stack.append((row, parent, path)) }
        }
        push(.root, parent: nil, path: .root)
        while let (row, parent, parentPath) = stack.popLast() {
            let record = base[row]
            guard let path = try? parentPath.appending(record.name) else { continue }
            let index = records.count
            records.append(record)
            paths.append(path)
            parents.append(parent)
            push(record.id, parent: index, path: path)
        }
    }

    subscript(index: Int) -> ItemRecord { records[index] }

    /// The indices of the record's ancestors, nearest first (the root not included).
    func ancestors(of index: Int) -> [Int] {
        var result: [Int] = []
        var cursor = parents[index]
        while let parent = cursor {
            result.append(parent)
            cursor = parents[parent]
        }
        return result
    }
}

/// Where each base item is on one side now. An item is *located* when its identity
/// (inode locally; file id, or size and ETag, remotely) is found at exactly one path;
/// otherwise it is looked for at its parent's place plus its name.
struct Placement {
    /// Each record's path on this side now.
    private(set) var now: [RemotePath]
    /// Records with an item of a compatible kind at `now`.
    private(set) var present: [Bool]
    /// Present records that are not at their parent's place plus their name.
    private(set) var moved: [Bool]

    /// A located item that took the place of another record still present there by name
    /// (a rename over an existing item) is not a move: the other record was replaced (an
    /// edit) and the located one is gone from its old place (a delete).
    init(tree: BaseTree, located: [Int: RemotePath], isPresent: (ItemRecord, RemotePath) -> Bool) {
        var rejected: Set<Int> = []
        var natural = [RemotePath](repeating: .root, count: tree.records.count)
        var now = natural, present: [Bool] = [], away = [Bool](repeating: false, count: tree.records.count)
        while true {
            // A record whose parent is at its recorded place has its recorded path as its
            // natural place: that path is shared, not built again.
            var atRecorded = [Bool](repeating: true, count: tree.records.count)
            for index in tree.indices {
                let parent = tree.parents[index]
                let parentAtRecorded = parent.map { atRecorded[$0] } ?? true
                natural[index] = parentAtRecorded ? tree.paths[index] : now[parent!].child(tree[index].name)
                if !rejected.contains(index), let place = located[index] {
                    now[index] = place
                    atRecorded[index] = place == tree.paths[index]
                    away[index] = parentAtRecorded ? !atRecorded[index] : place != natural[index]
                } else {
                    now[index] = natural[index]
                    atRecorded[index] = parentAtRecorded
                    away[index] = false
                }
            }
            let found = tree.indices.map { located[$0] != nil && !rejected.contains($0) }
            present = tree.indices.map { found[$0] || isPresent(tree[$0], now[$0]) }
            let elsewhere = tree.indices.filter { found[$0] && away[$0] }
            if elsewhere.isEmpty { break }
            let holders = Set(tree.indices.filter { !found[$0] && present[$0] }.map { now[$0] })
            let displaced = elsewhere.filter { holders.contains(now[$0]) }
            if displaced.isEmpty { break }
            rejected.formUnion(displaced)
        }
        self.now = now
        self.present = present
        moved = tree.indices.map { present[$0] && away[$0] }
    }

    /// Records whose inode is at exactly one local path holding the same item: the same
    /// kind and birth time (where known), and for anything but a folder the recorded size
    /// and mtime too (a rename keeps all three). ext4 hands a freed inode number to the next
    /// file made, so an inode alone can pair a deleted file with an unrelated new one, and
    /// `cp -p` or a download can give that one the same size and mtime: the birth time is
    /// what nothing copies (`LocalStat.birthNanoseconds`); a file renamed and edited in one pass
    /// is taken as a delete and a create, which loses nothing. A folder's mtime changes
    /// whenever an entry is added or removed inside it, so folders pair by inode and kind
    /// (as Nextcloud's discovery does); what a wrong pairing of folders moves is the
    /// folder, and its recorded entries are still looked for by their own identity.
    static func locatedLocally(_ tree: BaseTree, _ local: [RemotePath: LocalObservation]) -> [Int: RemotePath] {
        // Every record still at its recorded path, as itself: none can be anywhere else (its
        // inode would be at two paths), so nothing needs locating (the usual pass).
        let unmoved = tree.indices.allSatisfy { index in
            guard let recorded = tree[index].local, !tree.paths[index].isRoot else { return true }
            guard let seen = local[tree.paths[index]] else { return false }
            return seen.stat.inode == recorded.inode && isSameItem(kind: tree[index].kind, recorded: recorded, seen: seen)
        }
        if unmoved { return [:] }
        let keys = tree.indices.compactMap { index in tree[index].local.map { (index, $0.inode) } }
        let found = unique(keys, local.map { ($0.key, $0.value.stat.inode) })
        return found.filter { index, path in
            guard let seen = local[path], let recorded = tree[index].local else { return false }
            return isSameItem(kind: tree[index].kind, recorded: recorded, seen: seen)
        }
    }

    /// True when `seen` (an observation with the recorded inode) can be the item recorded
    /// as `kind` with local stat `recorded`.
    static func isSameItem(kind: ItemKind, recorded: LocalStat, seen: LocalObservation) -> Bool {
        guard seen.kind == kind, seen.stat.sameInode(as: recorded) else { return false }
        if kind == .folder { return true }
        return seen.stat.size == recorded.size && seen.stat.modificationTimeNanoseconds == recorded.modificationTimeNanoseconds
    }

    /// Records whose file id (or, when the store reports none, whose size and ETag for
    /// files and bundles) is at exactly one remote path holding a compatible kind.
    static func locatedRemotely(_ tree: BaseTree, _ remote: [RemotePath: RemoteEntry]) -> [Int: RemotePath] {
        let byFileID = remote.values.contains { $0.fileID != nil }
        func key(kind: ItemKind, size: Int64, etag: ETag?, fileID: String?) -> RemoteKey? {
            if byFileID { return fileID.map { RemoteKey(fileID: $0, size: 0) } }
            guard kind == .file || kind == .bundle, let etag else { return nil }
            return RemoteKey(etag: etag.value, size: size)
        }
        // Every record at its recorded path with its own key (folders: there at all): a key
        // that moved would be at two paths, so nothing needs locating (the usual pass).
        let unmoved = tree.indices.allSatisfy { index in
            let r = tree[index], path = tree.paths[index]
            guard !path.isRoot else { return true }
            let recordKey = key(kind: r.kind, size: r.size, etag: r.remoteETag, fileID: r.remoteFileID)
            guard let e = remote[path], compatible(r.kind, remoteKind: e.kind) else { return recordKey == nil && r.kind != .folder }
            return recordKey == nil || key(kind: e.kind, size: e.size, etag: e.etag, fileID: e.fileID) == recordKey
        }
        if unmoved { return [:] }
        let keys = tree.indices.compactMap { index -> (Int, RemoteKey)? in
            let r = tree[index]
            return key(kind: r.kind, size: r.size, etag: r.remoteETag, fileID: r.remoteFileID).map { (index, $0) }
        }
        let entries = remote.compactMap { path, e in
            key(kind: e.kind, size: e.size, etag: e.etag, fileID: e.fileID).map { (path, $0) }
        }
        let located = unique(keys, entries).filter { index, path in
            remote[path].map { compatible(tree[index].kind, remoteKind: $0.kind) } ?? false
        }
        return byFileID ? located : locatingFolders(tree, remote, from: located)
    }

    /// Without file ids a folder has no identity of its own (Apache's folder ETags change
    /// with their entries). A folder whose located contents all moved into one folder that
    /// no record holds, while its own place is gone, moved there: one move, not a move per
    /// file. Deepest folders first, so a moved folder inside a moved folder counts too.
    static func locatingFolders(_ tree: BaseTree, _ remote: [RemotePath: RemoteEntry],
                                from located: [Int: RemotePath]) -> [Int: RemotePath] {
        var located = located
        var children: [Int: [Int]] = [:]
        for index in tree.indices { if let parent = tree.parents[index] { children[parent, default: []].append(index) } }
        let recordedPaths = Set(tree.paths)
        let folders = tree.indices.filter { tree[$0].kind == .folder && remote[tree.paths[$0]] == nil }
        for folder in folders.sorted(by: { tree.paths[$0].components.count > tree.paths[$1].components.count }) {
            let places = Set((children[folder] ?? []).compactMap { child in
                located[child].map { path in path.parent }
            })
            guard places.count == 1, let place = places.first, !place.isRoot, !recordedPaths.contains(place),
                  remote[place]?.kind == .folder,
                  (children[folder] ?? []).allSatisfy({ located[$0] == nil || located[$0]!.name == tree[$0].name }),
                  !located.values.contains(place) else { continue }
            located[folder] = place
        }
        return located
    }

    /// What identifies a remote item across a move: its file id, else its ETag and size.
    private struct RemoteKey: Hashable {
        var fileID: String?
        var etag: String?
        var size: Int64
        init(fileID: String, size: Int64) { self.fileID = fileID; self.size = size }
        init(etag: String, size: Int64) { self.etag = etag; self.size = size }
    }

    /// Pairs each record with the one path holding its key, when both are unique.
    private static func unique<Key: Hashable>(_ records: [(Int, Key)],
                                             _ entries: [(RemotePath, Key)]) -> [Int: RemotePath] {
        let recordCounts = Dictionary(records.map { ($0.1, 1) }, uniquingKeysWith: +)
        let pathsByKey = Dictionary(grouping: entries, by: \.1)
        var result: [Int: RemotePath] = [:]
        for (index, key) in records where recordCounts[key] == 1 {
            if let paths = pathsByKey[key], paths.count == 1 { result[index] = paths[0].0 }
        }
        return result
    }

    /// True when a remote entry of `remoteKind` can be the item of a record of `kind`
    /// (the engine lists a bundle's root folder as a `bundle`).
    static func compatible(_ kind: ItemKind, remoteKind: ItemKind) -> Bool {
        kind == remoteKind
    }
}

extension RemotePath {
    /// The order of `<` (names compared byte by byte, parents first), without the
    /// allocations `<` makes: plans sort tens of thousands of paths.
    static func precedes(_ a: RemotePath, _ b: RemotePath) -> Bool {
        a.components.lexicographicallyPrecedes(b.components) { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// `self` with `name` appended, for names taken from existing valid paths.
    func child(_ name: String) -> RemotePath { (try? appending(name)) ?? self }

    /// The proper ancestors, nearest first, ending with the root (empty for the root).
    var ancestors: [RemotePath] {
        var result: [RemotePath] = []
        var cursor = self
        while !cursor.isRoot {
            cursor = cursor.parent
            result.append(cursor)
        }
        return result
    }
}
