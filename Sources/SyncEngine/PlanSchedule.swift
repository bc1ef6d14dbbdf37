/// Which steps of a plan may run now, so independent transfers run in parallel while every
/// step still comes after what it needs. Pure: the runner asks `next()`, starts the step,
/// and reports `finished`.
///
/// A step waits for
/// - the steps `ActionOrder` says it depends on (its parent folder made, the place it
///   takes vacated, the item it reads moved into place, …);
/// - the step that first records a row at the nearest folder above its path (the state DB
///   needs a parent row before a child row, also where no transfer is involved);
/// - for a deletion, every non-deletion of the plan (deletions come last) —
///   unless a non-deletion waits for it (a file replaced by a folder of its name: the
///   folder is made where the file was deleted), which would wait forever.
///
/// A step whose prerequisite failed or was skipped is skipped: it is decided again by the
/// next plan.
public struct PlanSchedule: Sendable {
    public enum Outcome: Sendable, Equatable { case succeeded, failed, skipped }

    public let plan: [SyncAction]
    private var waitingOn: [Int]
    private var dependents: [[Int]]
    private var unfinishedNonDeletions: Int
    private var ready: [Int] = []
    private var readyCursor = 0
    private var blockedDeletions: [Int] = []
    /// Deletions a non-deletion waits for: they run as soon as what they need is done.
    private var vacating: Set<Int> = []
    public private(set) var outcomes: [Outcome?]

    /// A schedule for `plan`, which must be in the order `Reconciler.plan` returns.
    public init(_ plan: [SyncAction]) {
        self.plan = plan
        let prerequisites = Self.prerequisites(plan)
        waitingOn = prerequisites.map(\.count)
        dependents = [[Int]](repeating: [], count: plan.count)
        for (index, before) in prerequisites.enumerated() {
            for p in before {
                dependents[p].append(index)
                if plan[p].isDeletion && !plan[index].isDeletion { vacating.insert(p) }
            }
        }
        unfinishedNonDeletions = plan.filter { !$0.isDeletion }.count
        outcomes = [Outcome?](repeating: nil, count: plan.count)
        for index in plan.indices where waitingOn[index] == 0 { makeReady(index) }
    }

    /// True when every step has an outcome.
    public var isDone: Bool { !outcomes.contains(nil) }

    /// A step that may start now, or nil when every remaining step waits for a running one.
    public mutating func next() -> Int? {
        if unfinishedNonDeletions == 0, !blockedDeletions.isEmpty {
            ready += blockedDeletions
            blockedDeletions = []
        }
        guard readyCursor < ready.count else { return nil }
        defer { readyCursor += 1 }
        return ready[readyCursor]
    }

    /// Records how step `index` ended; returns the steps skipped because of it.
    @discardableResult
    public mutating func finished(_ index: Int, _ outcome: Outcome) -> [Int] {
        guard outcomes[index] == nil else { return [] }
        outcomes[index] = outcome
        if !plan[index].isDeletion { unfinishedNonDeletions -= 1 }
        guard outcome == .succeeded else {
            var skipped: [Int] = []
            for dependent in dependents[index] where outcomes[dependent] == nil {
                skipped.append(dependent)
                skipped += finished(dependent, .skipped)
            }
            return skipped
        }
        for dependent in dependents[index] where outcomes[dependent] == nil {
            waitingOn[dependent] -= 1
            if waitingOn[dependent] == 0 { makeReady(dependent) }
        }
        return []
    }

    private mutating func makeReady(_ index: Int) {
        if plan[index].isDeletion, unfinishedNonDeletions > 0, !vacating.contains(index) {
            blockedDeletions.append(index)
        } else {
            ready.append(index)
        }
    }

    /// For each step, the indices of the steps that must finish before it (deduplicated;
    /// only earlier steps, so the graph has no cycle).
    static func prerequisites(_ plan: [SyncAction]) -> [[Int]] {
        var result = ActionOrder.dependencies(plan)
        var rowMaker: [RemotePath: Int] = [:]
        for (index, action) in plan.enumerated() {
            for path in action.recordedPaths where rowMaker[path] == nil { rowMaker[path] = index }
        }
        for (index, action) in plan.enumerated() {
            for path in action.recordedPaths + [action.path] {
                if let maker = path.ancestors.lazy.compactMap({ rowMaker[$0] }).first, maker != index {
                    result[index].append(maker)
                }
            }
        }
        return result.enumerated().map { index, before in Array(Set(before.filter { $0 < index })).sorted() }
    }
}

extension SyncAction {
    /// The paths at which the step writes a row of the state DB (a parent for later rows).
    var recordedPaths: [RemotePath] {
        switch self {
        case .createRemoteFolder(let path, _), .createLocalFolder(let path, _), .record(_, let path, _, _, _),
             .moveRemote(_, let path, _, _), .moveLocal(_, let path, _, _):
            [path]
        case .conflictCopy(let conflict):
            [conflict.copy]
        case .compareContents(let path, _, _, _, let ifDifferent):
            [path] + ifDifferent.flatMap(\.recordedPaths)
        default:
            []
        }
    }
}
