/// Where everything ends up: the final path of each record and of each new item.
///
/// A record's final place is the remote one when the remote moved it (the remote name
/// wins), else the local one when the local side moved it, else its parent's final place
/// plus its name. Places are mapped through the folders that hold them, so an item moved
/// into a folder that is itself renamed ends up in the renamed folder.
struct Layout {
    let tree: BaseTree
    let local: Placement
    let remote: Placement
    /// Final paths forced by collision handling (a conflict-copy name), by record index.
    var recordOverrides: [Int: RemotePath] = [:]
    /// New local items renamed to a conflict-copy name, by their current path.
    var newLocalOverrides: [RemotePath: RemotePath] = [:]
    /// Each record's final path, by index.
    private(set) var final: [RemotePath] = []
    private let localHolders: [RemotePath: Int]
    private let remoteHolders: [RemotePath: Int]

    init(tree: BaseTree, local: Placement, remote: Placement) {
        self.tree = tree
        self.local = local
        self.remote = remote
        localHolders = Self.holders(tree, local)
        remoteHolders = Self.holders(tree, remote)
        resolve()
    }

    private static func holders(_ tree: BaseTree, _ side: Placement) -> [RemotePath: Int] {
        Dictionary(tree.indices.filter { side.present[$0] }.map { (side.now[$0], $0) },
                   uniquingKeysWith: { first, _ in first })
    }

    /// Recomputes every record's final path (after the overrides changed). Moves on the
    /// two sides can form a cycle (each side put one folder inside the other); then the
    /// local move that closes it is set aside (the remote places win) and all paths are
    /// computed again.
    mutating func resolve() {
        var setAside: Set<Int> = []
        while true {
            switch attempt(settingAside: setAside) {
            case .paths(let paths):
                final = paths
                return
            case .cycle(let through?):
                setAside.insert(through)
            case .cycle(nil):
                final = tree.paths  // cannot happen (only local moves close cycles); stay put
                return
            }
        }
    }

    private enum Attempt {
        case paths([RemotePath])
        /// A cycle was found; the associated value is the local move that closes it.
        case cycle(Int?)
    }

    private func attempt(settingAside setAside: Set<Int>) -> Attempt {
        var memo = [RemotePath?](repeating: nil, count: tree.records.count)
        var stack: [(index: Int, byLocalMove: Bool)] = []
        var cycle: Attempt?
        func finalPath(_ index: Int) -> RemotePath? {
            if cycle != nil { return nil }
            if let done = memo[index] { return done }
            if let start = stack.lastIndex(where: { $0.index == index }) {
                cycle = .cycle(stack[start...].last(where: \.byLocalMove)?.index)
                return nil
            }
            let byLocalMove = recordOverrides[index] == nil && !remote.moved[index]
                && local.moved[index] && !setAside.contains(index)
            stack.append((index, byLocalMove))
            defer { stack.removeLast() }
            let result: RemotePath?
            if let forced = recordOverrides[index] {
                result = forced
            } else if remote.moved[index] {
                result = moved(index, remote, remoteHolders, [:])
            } else if byLocalMove {
                result = moved(index, local, localHolders, newLocalOverrides)
            } else {
                let parent: RemotePath? = tree.parents[index].map { finalPath($0) } ?? .root
                result = parent?.child(tree[index].name)
            }
            memo[index] = result
            return result
        }
        func moved(_ index: Int, _ side: Placement, _ holders: [RemotePath: Int],
                   _ renamed: [RemotePath: RemotePath]) -> RemotePath? {
            let place = side.now[index]
            return Self.map(place.parent, holders, renamed, finalPath)?.child(place.name)
        }
        let paths = tree.indices.map { finalPath($0) }
        if let cycle { return cycle }
        return .paths(paths.map { $0! })
    }

    /// The final place of whatever is at `path` now: through the nearest folder that is a
    /// record (or a renamed new folder), keeping the names below it.
    private static func map(_ path: RemotePath, _ holders: [RemotePath: Int], _ renamed: [RemotePath: RemotePath],
                            _ finalPath: (Int) -> RemotePath?) -> RemotePath? {
        if let copy = renamed[path] { return copy }
        if path.isRoot { return .root }
        if let index = holders[path] { return finalPath(index) }
        return map(path.parent, holders, renamed, finalPath)?.child(path.name)
    }

    /// The final place of the local item now at `path`.
    func localToFinal(_ path: RemotePath) -> RemotePath {
        Self.map(path, localHolders, newLocalOverrides) { final[$0] } ?? path
    }

    /// The final place of the remote item now at `path`.
    func remoteToFinal(_ path: RemotePath) -> RemotePath {
        Self.map(path, remoteHolders, [:]) { final[$0] } ?? path
    }

    /// The final place of a new local item now at `path`.
    func newLocalFinal(_ path: RemotePath) -> RemotePath {
        newLocalOverrides[path] ?? localToFinal(path.parent).child(path.name)
    }

    /// The final place of a new remote item now at `path`.
    func newRemoteFinal(_ path: RemotePath) -> RemotePath {
        remoteToFinal(path.parent).child(path.name)
    }

    /// Where the record is remotely once its folders are in their final places, or nil
    /// when absent there: equal to its final place when the remote already holds it there.
    func remotePlace(_ index: Int) -> RemotePath? {
        guard remote.present[index] else { return nil }
        let place = remote.now[index]
        return remoteToFinal(place.parent).child(place.name)
    }
}
