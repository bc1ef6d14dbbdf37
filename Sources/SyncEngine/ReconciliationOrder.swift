/// Puts a plan in an order the engine can carry out front to back: what an action needs
/// (a parent folder, the item it moves or reads) is made before it, a place is vacated
/// before something else is put there, a folder is moved away or deleted only after
/// everything that still used something inside it, and deletions come last unless
/// something waits for one.
enum ActionOrder {
    enum Side: Hashable { case local, remote }

    struct Place: Hashable {
        var side: Side
        var path: RemotePath
    }

    /// What an action touches, on which side.
    struct Effects {
        var needs: [Place] = []
        var provides: [Place] = []
        var vacates: [Place] = []
    }

    /// `actions` sorted by path (parents first, stable), then reordered so every action
    /// comes after those it depends on.
    static func sorted(_ actions: [SyncAction]) -> [SyncAction] {
        let initial = actions.enumerated().sorted { a, b in
            if RemotePath.precedes(a.element.path, b.element.path) { return true }
            if RemotePath.precedes(b.element.path, a.element.path) { return false }
            return a.offset < b.offset
        }.map(\.element)
        let dependencies = dependencies(initial)
        var state = [UInt8](repeating: 0, count: initial.count)  // 0 new, 1 visiting, 2 done
        var result: [SyncAction] = []
        result.reserveCapacity(initial.count)
        func visit(_ index: Int) {
            guard state[index] == 0 else { return }  // done, or a cycle (none is expected): break it here
            state[index] = 1
            for dependency in dependencies[index] { visit(dependency) }
            state[index] = 2
            result.append(initial[index])
        }
        for index in initial.indices where !initial[index].isDeletion { visit(index) }
        for index in initial.indices where initial[index].isDeletion { visit(index) }
        return result
    }

    /// For each action, the indices of the actions that must run before it.
    ///
    /// A need is looked up from its place upwards: the nearest action that puts something
    /// there (or at a folder above) runs first; an item still inside a folder that another
    /// action moves away or deletes is used before that. Something put at a place waits
    /// for whatever leaves that place.
    static func dependencies(_ actions: [SyncAction]) -> [[Int]] {
        let effects = actions.map(effects(of:))
        var provider: [Place: Int] = [:], vacater: [Place: Int] = [:]
        for (index, effect) in effects.enumerated() {
            for place in effect.provides where provider[place] == nil { provider[place] = index }
            for place in effect.vacates where vacater[place] == nil { vacater[place] = index }
        }
        var result = [[Int]](repeating: [], count: actions.count)
        for (index, effect) in effects.enumerated() {
            for need in effect.needs {
                // A need at a place the action itself vacates is the item there before the plan.
                let selfVacated = effect.vacates.contains(need)
                for (level, path) in ([need.path] + need.path.ancestors).enumerated() {
                    let place = Place(side: need.side, path: path)
                    if level > 0 || !selfVacated, let maker = provider[place], maker != index {
                        result[index].append(maker)
                        break
                    }
                    if level > 0, let leaver = vacater[place], leaver != index { result[leaver].append(index) }
                }
            }
            for place in effect.provides {
                if let previous = vacater[place], previous != index { result[index].append(previous) }
            }
        }
        return result
    }

    static func effects(of action: SyncAction) -> Effects {
        func l(_ path: RemotePath) -> Place { Place(side: .local, path: path) }
        func r(_ path: RemotePath) -> Place { Place(side: .remote, path: path) }
        switch action {
        case .createRemoteFolder(let path, _):
            return Effects(needs: [r(path.parent)], provides: [r(path)])
        case .upload(let path, let condition, _, _), .createRemoteSymlink(let path, _, let condition, _):
            let existing = condition == .mustNotExist ? [] : [r(path)]
            return Effects(needs: [r(path.parent), l(path)] + existing, provides: [r(path)])
        case .moveRemote(let from, let to, _, _):
            return Effects(needs: [r(from), r(to.parent)], provides: [r(to)], vacates: [r(from)])
        case .deleteRemote(let path, _, _):
            return Effects(needs: [r(path)], vacates: [r(path)])
        case .createLocalFolder(let path, _):
            return Effects(needs: [l(path.parent)], provides: [l(path)])
        case .download(let path, _, let replacing, _), .createLocalSymlink(let path, _, let replacing, _):
            let existing = replacing == nil ? [] : [l(path)]
            return Effects(needs: [l(path.parent), r(path)] + existing, provides: [l(path)])
        case .moveLocal(let from, let to, _, _):
            return Effects(needs: [l(from), l(to.parent)], provides: [l(to)], vacates: [l(from)])
        case .deleteLocal(let path, _, _):
            return Effects(needs: [l(path)], vacates: [l(path)])
        case .conflictCopy(let conflict):
            return Effects(needs: [l(conflict.path), l(conflict.copy.parent), r(conflict.copy.parent)],
                           provides: [l(conflict.copy), r(conflict.copy)], vacates: [l(conflict.path)])
        case .compareContents(let path, _, _, _, _), .record(_, let path, _, _, _):
            return Effects(needs: [l(path), r(path)])
        case .forget, .remoteNameWins:
            return Effects()
        }
    }
}
