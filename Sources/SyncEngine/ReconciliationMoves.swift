/// The moves of one side, in an order that works, found by playing them on the side's
/// tree: each move runs from where its item is at that moment (its folders may have moved
/// before it), into a place that is free, never into itself. An item moves only once its
/// final folder is in place, so nothing already placed is dragged away again. Moves out of
/// an item come before moves into it (crossed renames on the two sides), and a place is
/// left before another item takes it (a chain of renames).
struct MoveSchedule {
    struct Move {
        var index: Int
        var from: RemotePath
        var to: RemotePath
    }

    /// The moves, in the order they were played.
    private(set) var moves: [Move] = []
    /// The same moves by record index.
    private var byRecord: [Int: [Move]] = [:]
    /// Each record's place on this side after all moves (nil when absent on this side):
    /// where deletions, which run last, and conflict copies find it.
    private(set) var end: [RemotePath?]
    /// Records whose move could not be played (a cycle of renames such as a swap); the
    /// planner gives the first one another final place and plans again.
    private(set) var stuck: [Int] = []

    /// - Parameters:
    ///   - moving: the records that go to `final` on this side; the others present here
    ///     stay where they are (and follow their folders) until their own action runs.
    init(tree: BaseTree, side: Placement, final: [RemotePath], moving: [Bool]) {
        var position: [RemotePath?] = tree.indices.map { side.present[$0] ? side.now[$0] : nil }
        end = position
        guard tree.indices.contains(where: { moving[$0] && position[$0] != final[$0] }) else { return }
        let folders = tree.indices.map { tree[$0].kind == .folder || tree[$0].kind == .bundle }
        var occupant: [RemotePath: Int] = [:]
        for index in tree.indices where moving[index] { occupant[position[index]!] = index }
        let finalHolder = Dictionary(tree.indices.filter { moving[$0] }.map { (final[$0], $0) },
                                     uniquingKeysWith: { first, _ in first })
        var settled = [Bool](repeating: false, count: tree.records.count)
        var pending = tree.indices.filter { moving[$0] }.sorted { RemotePath.precedes(final[$0], final[$1]) }
        while !pending.isEmpty {
            var waiting: [Int] = []
            for index in pending {
                let from = position[index]!, to = final[index]
                let parentReady = finalHolder[to.parent].map { settled[$0] || $0 == index } ?? true
                if from == to, parentReady {
                    settled[index] = true
                    continue
                }
                guard parentReady, occupant[to] == nil, !to.isDescendant(of: from) else {
                    waiting.append(index)
                    continue
                }
                moves.append(Move(index: index, from: from, to: to))
                byRecord[index, default: []].append(moves.last!)
                if folders[index] {
                    Self.move(from, to, &position, &occupant, moving)
                } else {
                    (position[index], occupant[from], occupant[to]) = (to, nil, index)
                }
                settled[index] = true
            }
            if waiting.count == pending.count {
                stuck = [waiting[0]]
                break
            }
            pending = waiting
        }
        end = position
    }

    /// Plays one move: the item at `from` and everything below it go to `to`.
    private static func move(_ from: RemotePath, _ to: RemotePath, _ position: inout [RemotePath?],
                             _ occupant: inout [RemotePath: Int], _ moving: [Bool]) {
        for index in position.indices {
            guard let place = position[index], place.isDescendant(of: from) else { continue }
            let moved = place.rebased(from: from, to: to)
            position[index] = moved
            if moving[index] {
                if occupant[place] == index { occupant[place] = nil }
                occupant[moved] = index
            }
        }
    }

    /// The moves of the record at `index`, in order.
    func moves(of index: Int) -> [Move] { byRecord[index] ?? [] }
}

extension RemotePath {
    /// This path (at or below `from`) after `from` moved to `to`.
    func rebased(from: RemotePath, to: RemotePath) -> RemotePath {
        components.dropFirst(from.components.count).reduce(to) { $0.child($1) }
    }
}
