import SyncEngine
import Testing
import TestSupport

/// Random trees, random changes on both sides: every plan must run front to back with
/// each action's preconditions met, and leave both sides holding the same tree.
@Suite("Reconciliation: random changes on both sides")
struct RandomPlanTests {
    enum Side { case local, remote }

    static func folders(_ w: World, _ side: Side) -> [RemotePath] {
        let items = side == .local ? w.local.mapValues(\.kind) : w.remote.mapValues(\.kind)
        return [.root] + items.filter { $0.value == .folder }.map(\.key).sorted()
    }

    static func items(_ w: World, _ side: Side) -> [RemotePath] {
        (side == .local ? Array(w.local.keys) : Array(w.remote.keys)).sorted()
    }

    static func change(_ w: inout World, _ side: Side, _ random: inout SeededRandom, step: Int) {
        let items = items(w, side), folders = folders(w, side)
        guard let target = items.randomElement(using: &random), let folder = folders.randomElement(using: &random) else { return }
        let name = "n\(step)" + (Bool.random(using: &random) ? ".txt" : "")
        let fresh = folder.isRoot ? name : "\(folder)/\(name)"
        switch (Int.random(in: 0..<5, using: &random), side) {
        case (0, .local) where w.local[target]?.kind == .file: w.editLocal(target.description, size: Int64(step))
        case (0, .remote) where w.remote[target]?.kind == .file: w.editRemote(target.description, size: Int64(step))
        case (1, .local): w.deleteLocal(target.description)
        case (1, .remote): w.deleteRemote(target.description)
        case (2, .local) where !folder.isDescendant(of: target): w.moveLocal(target.description, fresh)
        case (2, .remote) where !folder.isDescendant(of: target): w.moveRemote(target.description, fresh)
        case (3, .local): w.createLocal(fresh, .folder)
        case (3, .remote): w.createRemote(fresh, .folder)
        case (_, .local): w.createLocal(fresh, size: Int64(step % 3))
        case (_, .remote): w.createRemote(fresh, size: Int64(step % 3))
        }
    }

    static func world(seed: UInt64, fileIDs: Bool, changes: Int = 12) -> World {
        var random = SeededRandom(seed: seed)
        var w = World(fileIDs: fileIDs)
        var folders = [""]
        for n in 0..<30 {
            let parent = folders.randomElement(using: &random)!
            let path = parent.isEmpty ? "i\(n)" : "\(parent)/i\(n)"
            if Int.random(in: 0..<3, using: &random) == 0 {
                w.synced(path, .folder)
                folders.append(path)
            } else {
                w.synced(path, size: Int64(n))
            }
        }
        for step in 0..<changes {
            change(&w, Bool.random(using: &random) ? .local : .remote, &random, step: 100 + step)
        }
        return w
    }

    /// Seeds 0..<300 with 4 to 43 changes each. A wider sweep (40 000 worlds) passed when
    /// this was written; widen the range to hunt after a change to the planner.
    @Test("every plan runs and converges", arguments: 0..<300)
    func randomPlan(seed: Int) {
        for fileIDs in [true, false] {
            let w = Self.world(seed: UInt64(seed), fileIDs: fileIDs, changes: 4 + seed % 40)
            let plan = w.plan()
            let run = PlanSimulator.run(plan, on: w)
            #expect(run.problems == [], "seed \(seed), file ids \(fileIDs): \(plan)")
            #expect(run.converged, "seed \(seed), file ids \(fileIDs)")
        }
    }
}
