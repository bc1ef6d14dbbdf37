import Foundation
@testable import StateDatabase
import SyncEngine
import SyncModel
import Testing

/// Concurrent `apply` calls share one transaction (issue 16 item 4); one member's refused
/// change fails that member only.
@Suite(.timeLimit(.minutes(1))) struct GroupCommitTests {
    /// While one call's transaction runs, the calls that come meanwhile wait and then go
    /// together in the next one; each returns its own outcome. (Threads, not tasks: the
    /// callers block, as the runner's off-pool finishing does.)
    @Test func callsMadeDuringACommitShareTheNextOne() {
        let group = GroupCommit()
        let batches = Batches()
        let others = 5
        let done = DispatchGroup()
        let failures = Failures()
        func call(_ n: Int64, holding: Bool) {
            done.enter()
            Thread {
                do {
                    try group.apply([.completeOperation(n)]) { members in
                        // Held until every other call waits: they must all go in one next commit.
                        if holding {
                            batches.begin()
                            while group.waiting < others { usleep(1000) }
                        }
                        return batches.commit(members)
                    }
                } catch {
                    failures.add(n)
                }
                done.leave()
            }.start()
        }
        call(0, holding: true)
        while !batches.begun { usleep(1000) }
        for n in 1...Int64(others) { call(n, holding: false) }
        done.wait()
        #expect(batches.sizes == [1, others], "transactions of \(batches.sizes) calls")
        #expect(failures.calls == [3], "the member whose change is refused, and only it, fails")
    }

    /// A shared transaction that fails is redone member by member: the refused change (a
    /// file whose folder is not recorded) fails its own call, the others' rows are written.
    @Test func aRefusedMemberFailsAloneAndTheOthersAreWritten() throws {
        try withStateDatabase { database in
            let good = file("a.txt"), orphan = file("b.txt", in: ItemIdentifier("no-such-folder")), other = file("c.txt")
            let outcomes = database.commit([[.upsert(good)], [.upsert(orphan)], [.upsert(other)]])
            #expect(outcomes.count == 3)
            #expect((try? outcomes[0].get()) != nil && (try? outcomes[2].get()) != nil)
            guard case .failure(let refusal) = outcomes[1] else {
                Issue.record("the orphan was written")
                return
            }
            let code = refusal.code
            #expect(code == .parentMissing, "\(refusal.message)")
            let written = (try database.item(good.id), try database.item(other.id), try database.item(orphan.id))
            #expect(written.0 != nil && written.1 != nil && written.2 == nil)
        }
    }
}

/// Records the members of each commit; the member whose operation is 3 is refused.
private final class Batches: @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [Int] = []
    private var started = false
    var sizes: [Int] { lock.withLock { recorded } }
    var begun: Bool { lock.withLock { started } }
    func begin() { lock.withLock { started = true } }

    func commit(_ members: [[StateChange]]) -> [Result<Void, ProviderError>] {
        lock.withLock { recorded.append(members.count) }
        return members.map { changes in
            if case .completeOperation(3) = changes.first { return .failure(ProviderError(.cannotSynchronize, "refused")) }
            return .success(())
        }
    }
}

/// The calls that failed.
private final class Failures: @unchecked Sendable {
    private let lock = NSLock()
    private var failed: [Int64] = []
    var calls: [Int64] { lock.withLock { failed } }
    func add(_ call: Int64) { lock.withLock { failed.append(call) } }
}
