import SyncEngine

/// Carries a plan out on two trees of kinds (no bytes), front to back, checking each
/// action's preconditions the way a store would: parents exist, creates and move targets
/// are free, sources exist. `compareContents` takes its "different" branch (the harder one).
struct PlanSimulator {
    var local: [RemotePath: ItemKind]
    var remote: [RemotePath: ItemKind]
    private(set) var problems: [String] = []

    init(_ world: World) {
        local = world.local.mapValues { $0.kind == .bundle ? .file : $0.kind }
        remote = world.remote.mapValues(\.kind)
    }

    /// Runs `plan` and returns the problems found (empty: every action could run).
    static func run(_ plan: [SyncAction], on world: World) -> PlanSimulator {
        var simulator = PlanSimulator(world)
        for action in plan { simulator.apply(action) }
        return simulator
    }

    /// True when both sides hold the same paths with the same kinds.
    var converged: Bool { local == remote }

    typealias Tree = WritableKeyPath<PlanSimulator, [RemotePath: ItemKind]>

    mutating func apply(_ action: SyncAction) {
        switch action {
        case .createRemoteFolder(let path, _):
            create(path, .folder, in: \.remote)
        case .upload(let path, let condition, _, _), .createRemoteSymlink(let path, _, let condition, _):
            require(local[path] != nil, "upload of \(path): no local item")
            write(path, condition == .mustNotExist, kind: local[path] ?? .file, in: \.remote)
        case .moveRemote(let from, let to, _, _):
            move(from, to, in: \.remote)
        case .deleteRemote(let path, _, _):
            delete(path, in: \.remote)
        case .createLocalFolder(let path, _):
            create(path, .folder, in: \.local)
        case .download(let path, _, let replacing, _), .createLocalSymlink(let path, _, let replacing, _):
            require(remote[path] != nil, "download of \(path): no remote item")
            write(path, replacing == nil, kind: remote[path] ?? .file, in: \.local)
        case .moveLocal(let from, let to, _, _):
            move(from, to, in: \.local)
        case .deleteLocal(let path, _, _):
            delete(path, in: \.local)
        case .conflictCopy(let conflict):
            let kind = local[conflict.path] ?? .file
            move(conflict.path, conflict.copy, in: \.local)
            create(conflict.copy, kind, in: \.remote)
        case .compareContents(let path, _, _, _, let ifDifferent):
            require(local[path] != nil && remote[path] != nil, "compare of \(path): missing on a side")
            for step in ifDifferent { apply(step) }
        case .record(_, let path, _, _, _):
            require(local[path] != nil && remote[path] != nil, "record of \(path): missing on a side")
        case .forget, .remoteNameWins:
            break
        }
    }

    private mutating func require(_ condition: Bool, _ problem: @autoclosure () -> String) {
        if !condition { problems.append(problem()) }
    }

    private func side(_ tree: Tree) -> String { tree == \PlanSimulator.local ? "local" : "remote" }

    private func hasParent(_ path: RemotePath, _ tree: Tree) -> Bool {
        path.parent.isRoot || self[keyPath: tree][path.parent] == .folder
    }

    private mutating func create(_ path: RemotePath, _ kind: ItemKind, in tree: Tree) {
        let (name, parentOK, free) = (side(tree), hasParent(path, tree), self[keyPath: tree][path] == nil)
        require(parentOK, "\(name) create \(path): no parent")
        require(free, "\(name) create \(path): already there")
        self[keyPath: tree][path] = kind
    }

    private mutating func write(_ path: RemotePath, _ mustBeNew: Bool, kind: ItemKind, in tree: Tree) {
        let (name, parentOK, free) = (side(tree), hasParent(path, tree), self[keyPath: tree][path] == nil)
        require(parentOK, "\(name) write \(path): no parent")
        require(free == mustBeNew, "\(name) write \(path): \(mustBeNew ? "exists" : "missing")")
        self[keyPath: tree][path] = kind
    }

    private mutating func move(_ from: RemotePath, _ to: RemotePath, in tree: Tree) {
        let items = self[keyPath: tree]
        guard items[from] != nil, items[to] == nil, hasParent(to, tree) else {
            problems.append("\(side(tree)) move \(from) → \(to): source missing, target taken or no parent")
            return
        }
        self[keyPath: tree] = Dictionary(uniqueKeysWithValues: items.map { (World.rebase($0.key, from, to), $0.value) })
    }

    private mutating func delete(_ path: RemotePath, in tree: Tree) {
        let (name, exists) = (side(tree), self[keyPath: tree][path] != nil)
        require(exists, "\(name) delete \(path): missing")
        self[keyPath: tree] = self[keyPath: tree].filter { !$0.key.isDescendant(of: path) }
    }
}
