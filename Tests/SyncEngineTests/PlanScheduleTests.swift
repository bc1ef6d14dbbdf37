import SyncEngine
import Testing

@Suite("PlanSchedule: what may run now")
struct PlanScheduleTests {
    let stat = LocalStat(inode: 1, size: 1, modificationTimeNanoseconds: 1)

    func drainReady(_ schedule: inout PlanSchedule) -> [Int] {
        var ready: [Int] = []
        while let next = schedule.next() { ready.append(next) }
        return ready
    }

    @Test("uploads into one new folder wait for it, then run together")
    func parentFirstThenParallel() {
        let plan: [SyncAction] = [
            .createRemoteFolder(p("d"), item: nil),
            .upload(p("d/1"), condition: .mustNotExist, source: stat, item: nil),
            .upload(p("d/2"), condition: .mustNotExist, source: stat, item: nil),
            .upload(p("top"), condition: .mustNotExist, source: stat, item: nil),
        ]
        var schedule = PlanSchedule(plan)
        #expect(drainReady(&schedule) == [0, 3])
        schedule.finished(0, .succeeded)
        #expect(drainReady(&schedule) == [1, 2])
    }

    @Test("a record of a folder both sides made comes before the rows inside it")
    func rowsNeedTheirParentRow() {
        let entry = RemoteEntry(path: p("d"), kind: .folder, size: 0, etag: nil)
        let plan: [SyncAction] = [
            .record(item: nil, path: p("d"), kind: .folder, local: stat, remote: entry),
            .upload(p("d/1"), condition: .mustNotExist, source: stat, item: nil),
        ]
        var schedule = PlanSchedule(plan)
        #expect(drainReady(&schedule) == [0])
    }

    @Test("deletions wait for every other step; a failure skips what needed it")
    func deletionsLastAndFailuresSkip() {
        let plan: [SyncAction] = [
            .createLocalFolder(p("n"), item: nil),
            .download(p("n/x"), version: nil, replacing: nil, item: nil),
            .deleteRemote(p("old"), version: nil, item: ItemIdentifier("o")),
        ]
        var schedule = PlanSchedule(plan)
        #expect(drainReady(&schedule) == [0])
        #expect(schedule.finished(0, .failed) == [1])
        #expect(drainReady(&schedule) == [2])
        schedule.finished(2, .succeeded)
        #expect(schedule.isDone)
        #expect(schedule.outcomes == [.failed, .skipped, .succeeded])
    }

    /// A file on the server replaced by a folder of its name: the local file is deleted,
    /// the folder made in its place and filled. The deletion cannot wait for the steps
    /// that wait for it (they all stayed unstarted, pass after pass).
    @Test("a deletion a step waits for runs first: a file replaced by a folder of its name")
    func deletionAStepWaitsFor() {
        // In the planner's order: the deletion before the folder that takes its place.
        let plan: [SyncAction] = [
            .deleteLocal(p("d/f"), expected: stat, item: ItemIdentifier("f")),
            .createLocalFolder(p("d/f"), item: nil),
            .download(p("d/f/x"), version: nil, replacing: nil, item: nil),
            .download(p("other"), version: nil, replacing: nil, item: nil),
            .deleteRemote(p("old"), version: nil, item: ItemIdentifier("o")),
        ]
        var schedule = PlanSchedule(plan)
        #expect(drainReady(&schedule) == [0, 3], "the local deletion and the other download; the remote deletion waits")
        schedule.finished(0, .succeeded)
        schedule.finished(3, .succeeded)
        #expect(drainReady(&schedule) == [1])
        schedule.finished(1, .succeeded)
        #expect(drainReady(&schedule) == [2])
        schedule.finished(2, .succeeded)
        #expect(drainReady(&schedule) == [4])
        schedule.finished(4, .succeeded)
        #expect(schedule.isDone && schedule.outcomes.allSatisfy { $0 == .succeeded }, "\(schedule.outcomes)")
    }
}
