import Replica
import SyncEngine
import Testing

/// The pure settling rules of the watcher: per-path quiet periods, the cap, moves as
/// one group, folders above holding what is below, and lost events.
@Suite struct ChangeAggregatorTests {
    let t0 = ContinuousClock.now
    func at(_ ms: Int) -> ContinuousClock.Instant { t0 + .milliseconds(ms) }
    func p(_ s: String) -> RemotePath { try! RemotePath(string: s) }
    func aggregator() -> ChangeAggregator { ChangeAggregator(debounce: .seconds(1), cap: .seconds(10)) }

    @Test func aPathIsDueAfterItsQuietPeriodAndEventsCoalesce() {
        var a = aggregator()
        a.add(.changed(p("doc.txt")), at: at(0))
        a.add(.changed(p("doc.txt")), at: at(600))
        #expect(a.deadline() == at(1600))
        #expect(a.takeDue(at: at(1500)).changes.isEmpty)
        let due = a.takeDue(at: at(1600)).changes
        #expect(due.paths == [p("doc.txt"): false])
        #expect(a.isEmpty)
    }

    @Test func pathsSettleEachOnItsOwn() {
        var a = aggregator()
        a.add(.changed(p("a")), at: at(0))
        a.add(.changed(p("b")), at: at(200))
        a.add(.changed(p("c")), at: at(400))
        #expect(a.takeDue(at: at(1250)).changes.paths == [p("a"): false, p("b"): false])
        #expect(a.takeDue(at: at(1400)).changes.paths == [p("c"): false])
    }

    @Test func aFileWrittenForeverIsDueAtTheCap() {
        var a = aggregator()
        for ms in stride(from: 0, through: 12_000, by: 100) { a.add(.changed(p("log")), at: at(ms)) }
        // Never quiet for 1 s, but due 10 s after its first event.
        #expect(a.deadline() == at(10_000))
        let due = a.takeDue(at: at(10_000)).changes
        #expect(due.paths == [p("log"): false])
        #expect(due.overdue == [p("log")], "synced as it is, even if a writer still holds it")
    }

    @Test func bothEndsOfAMoveAreDueTogether() {
        var a = aggregator()
        a.add(.moved(from: p("old"), to: p("new"), isFolder: false), at: at(0))
        a.add(.changed(p("new")), at: at(800))  // written again after the rename
        #expect(a.takeDue(at: at(1000)).changes.isEmpty, "the vanished end must not settle alone (it would read as a delete)")
        #expect(a.takeDue(at: at(1800)).changes.paths == [p("old"): false, p("new"): false])
    }

    /// A folder moved out of a folder that is then moved into the first's new place: the
    /// old end of the first move, carried below the second, waits for that folder; its new
    /// end must wait with it. Released alone (two-client test, Apache seed 31337 beside a
    /// heavy load), the pass saw every inode below it at two paths, matched no move, and
    /// uploaded the folder's files as new ones, bringing back a version since overwritten.
    @Test func aMoveWhoseOldEndWaitsForAFolderAboveIsDueWhole() {
        var a = aggregator()
        a.add(.moved(from: p("a/old/b"), to: p("x"), isFolder: true), at: at(0))
        a.add(.moved(from: p("a"), to: p("x/y"), isFolder: true), at: at(900))
        #expect(a.takeDue(at: at(1000)).changes.isEmpty, "the first move's new end settled without its old end")
        let due = a.takeDue(at: at(1900)).changes.paths
        #expect(due[p("x")] == true && due[p("a")] == false, "\(due)")
    }

    @Test func aChainOfMovesIsOneGroup() {
        var a = aggregator()
        a.add(.moved(from: p("a"), to: p("b"), isFolder: false), at: at(0))
        a.add(.moved(from: p("b"), to: p("c"), isFolder: false), at: at(900))
        #expect(a.takeDue(at: at(1500)).changes.isEmpty)
        #expect(a.takeDue(at: at(1900)).changes.paths == [p("a"): false, p("b"): false, p("c"): false])
    }

    @Test func aFolderMoveCarriesWhatWaitsBelowIt() {
        var a = aggregator()
        a.add(.changed(p("dir/sub/f")), at: at(0))
        a.add(.moved(from: p("dir"), to: p("renamed"), isFolder: true), at: at(900))
        let due = a.takeDue(at: at(1900)).changes
        #expect(due.paths == [p("dir"): false, p("renamed"): true, p("renamed/sub/f"): false])
    }

    @Test func aPathWaitsForAFolderAboveItThatIsStillSettling() {
        var a = aggregator()
        a.add(.changed(p("new/f")), at: at(0))
        a.add(.folderAppeared(p("new")), at: at(500))
        #expect(a.takeDue(at: at(1200)).changes.isEmpty)
        #expect(a.takeDue(at: at(1500)).changes.paths == [p("new"): true, p("new/f"): false])
    }

    @Test func anOverflowAsksForOneFullScanOnceEventsAreQuiet() {
        var a = aggregator()
        a.add(.changed(p("x")), at: at(0))
        a.add(.overflow, at: at(100))
        a.add(.changed(p("y")), at: at(900))
        #expect(a.takeDue(at: at(1500)).changes.isEmpty)
        let due = a.takeDue(at: at(1900))
        #expect(due.changes.fullScan && due.changes.paths.isEmpty)
        #expect(due.firstSeen == at(0))
        #expect(a.isEmpty)
    }

    @Test func pathsPutBackAreDueAgainButNotAfterTheCap() {
        var a = aggregator()
        a.add(.changed(p("open")), at: at(0))
        let taken = a.takeDue(at: at(1000))
        a.putBack(taken.changes.paths, firstSeen: taken.firstSeen!, at: at(1000))
        #expect(a.deadline() == at(2000))
        a.putBack([p("open"): false], firstSeen: at(0), at: at(9500))
        #expect(a.deadline() == at(10_000))
    }

    @Test func vimsBackupDanceSettlesAsOneEditOfTheFile() {
        var a = aggregator()
        // rename doc → doc~ (excluded: the watcher reports it as removed), write doc, delete doc~
        a.add(.removed(p("doc")), at: at(0))
        a.add(.changed(p("doc")), at: at(5))
        a.add(.changed(p("doc")), at: at(10))
        #expect(a.takeDue(at: at(1010)).changes.paths == [p("doc"): false])
    }
}
