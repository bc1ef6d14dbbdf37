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
}
