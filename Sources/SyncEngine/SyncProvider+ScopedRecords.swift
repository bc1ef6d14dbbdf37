// The rows a watched pass reads: what it plans about and what that depends on, never the
// whole domain (issue 16: a save in a 100 000-item domain reads a few rows). A row the
// pass does not read is taken as it is recorded on both sides, so it needs no step; what a
// step about a read row can depend on is read with it: the folders above it (its path),
// its siblings (names a new item must not take, a conflict copy's free name), everything
// below a folder (a folder deleted, moved or replaced), and the rows of the inodes the
// pass saw at new places (moves, which the planner pairs by inode).

/// What a watched pass read of the state DB.
public struct ScopedRecords: Sendable {
    /// The rows, the root's included; each row's folders up to the root are in it.
    public var rows: [ItemRecord]
    /// How many rows the domain has in all (the mass-delete guard's share counts them).
    public var total: Int
    /// The folders whose children were all read.
    public var listed: Set<ItemIdentifier>

    /// True when rows outside `rows` exist: every one of them is on both sides as recorded.
    public var isPartial: Bool { rows.count < total }
}

extension SyncProvider {
    /// The rows around `paths` (each with its subtree when it is, or was, a folder), the
    /// root's included.
    public func items(around paths: [RemotePath]) throws(ProviderError) -> ScopedRecords {
        var reader = ScopedReader(state: state)
        try reader.addRoot()
        for path in paths { try reader.add(path) }
        return ScopedRecords(rows: Array(reader.rows.values), total: try state.itemCount(), listed: reader.listed)
    }

    /// `scoped` with the rows whose recorded local inode is in `inodes`, and the rows around
    /// them, added.
    public func items(withLocalInodes inodes: [UInt64], besides scoped: ScopedRecords) throws(ProviderError) -> ScopedRecords {
        var reader = ScopedReader(state: state, rows: scoped.rows, listed: scoped.listed)
        for inode in Set(inodes) {
            guard let row = try state.item(localInode: inode), reader.rows[row.id] == nil else { continue }
            try reader.add(row)
        }
        return ScopedRecords(rows: Array(reader.rows.values), total: scoped.total, listed: reader.listed)
    }
}

/// Reads rows by path and by id through the state store's indexed lookups, each once.
struct ScopedReader {
    let state: any StateStore
    private(set) var rows: [ItemIdentifier: ItemRecord] = [:]
    /// Folders whose children (and, for `subtrees`, everything below) were read.
    private(set) var listed: Set<ItemIdentifier> = []
    private var below: Set<ItemIdentifier> = []

    init(state: any StateStore, rows: [ItemRecord] = [], listed: Set<ItemIdentifier> = []) {
        self.state = state
        self.rows = Dictionary(rows.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        self.listed = listed
    }

    mutating func addRoot() throws(ProviderError) {
        if let root = try state.item(.root) { rows[.root] = root }
    }

    /// The folders on the way to `path`, the children of its parent (its siblings and its
    /// own row) and, when its row is a folder, everything below it.
    mutating func add(_ path: RemotePath) throws(ProviderError) {
        var parent = ItemIdentifier.root
        for name in path.components.dropLast() {
            guard let folder = try child(of: parent, named: name) else {
                return try listChildren(of: parent)  // a new folder: the names beside it
            }
            parent = folder.id
        }
        try listChildren(of: parent)
        guard !path.isRoot else { return }
        if let own = try child(of: parent, named: path.name), own.kind == .folder { try listSubtree(of: own.id) }
    }

    /// `row`, the folders above it up to the root, its siblings and, for a folder, its subtree.
    mutating func add(_ row: ItemRecord) throws(ProviderError) {
        rows[row.id] = row
        var cursor = row.parentID
        while let id = cursor, id != .root, rows[id] == nil {
            guard let folder = try state.item(id) else { break }
            rows[id] = folder
            cursor = folder.parentID
        }
        if let parent = row.parentID { try listChildren(of: parent) }
        if row.kind == .folder { try listSubtree(of: row.id) }
    }

    private mutating func child(of parent: ItemIdentifier, named name: String) throws(ProviderError) -> ItemRecord? {
        guard let row = try state.item(parent: parent, name: name) else { return nil }
        rows[row.id] = row
        return row
    }

    private mutating func listChildren(of folder: ItemIdentifier) throws(ProviderError) {
        guard listed.insert(folder).inserted else { return }
        for row in try state.children(of: folder) { rows[row.id] = row }
    }

    private mutating func listSubtree(of folder: ItemIdentifier) throws(ProviderError) {
        var frontier = [folder]
        while let next = frontier.popLast() {
            guard below.insert(next).inserted else { continue }
            listed.insert(next)
            for row in try state.children(of: next) {
                rows[row.id] = row
                if row.kind == .folder { frontier.append(row.id) }
            }
        }
    }
}
