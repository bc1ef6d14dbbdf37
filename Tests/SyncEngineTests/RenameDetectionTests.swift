import SyncEngine
import Testing

@Suite("Reconciliation: rename detection")
struct RenameDetectionTests {
    /// A folder `d` of `count` files, plus `x.txt`, all in sync.
    static func world(files count: Int = 3, fileIDs: Bool = true) -> World {
        var w = World(fileIDs: fileIDs)
        w.synced("x.txt")
        w.synced("d", .folder)
        for n in 0..<count { w.synced("d/f\(n).txt") }
        return w
    }

    static func expectRuns(_ plan: [SyncAction], on world: World, sourceLocation: SourceLocation = #_sourceLocation) {
        let run = PlanSimulator.run(plan, on: world)
        #expect(run.problems == [], sourceLocation: sourceLocation)
        #expect(run.converged, sourceLocation: sourceLocation)
    }

    @Test("a file renamed locally is one remote move, found by inode")
    func localFileRename() {
        var w = Self.world()
        w.moveLocal("x.txt", "y.txt")
        #expect(w.plan() == [.moveRemote(from: p("x.txt"), to: p("y.txt"), version: w.etag("x.txt"), item: w.id("x.txt"))])
    }

    @Test("a folder of 500 files renamed locally is exactly one remote move")
    func localFolderRename() {
        var w = Self.world(files: 500)
        w.moveLocal("d", "e")
        let plan = w.plan()
        #expect(plan == [.moveRemote(from: p("d"), to: p("e"), version: w.etag("d"), item: w.id("d"))])
        Self.expectRuns(plan, on: w)
    }

    @Test("a folder of 500 files renamed remotely is exactly one local move, found by file id")
    func remoteFolderRename() {
        var w = Self.world(files: 500)
        w.moveRemote("d", "e")
        let plan = w.plan()
        #expect(plan == [.moveLocal(from: p("d"), to: p("e"), expected: w.stat("d"), item: w.id("d"))])
        Self.expectRuns(plan, on: w)
    }

    @Test("without file ids a remote file rename is found by size and ETag")
    func remoteRenameBySizeAndETag() {
        var w = Self.world(fileIDs: false)
        w.moveRemote("x.txt", "y.txt")
        #expect(w.plan() == [.moveLocal(from: p("x.txt"), to: p("y.txt"), expected: w.stat("x.txt"), item: w.id("x.txt"))])
    }

    @Test("without file ids a remote folder rename is one local move, inferred from its files")
    func remoteFolderRenameWithoutIDs() {
        var w = Self.world(files: 3, fileIDs: false)
        w.moveRemote("d", "e")
        let plan = w.plan()
        #expect(plan == [.moveLocal(from: p("d"), to: p("e"), expected: w.stat("d"), item: w.id("d"))])
        Self.expectRuns(plan, on: w)
    }

    @Test("a rename plus an edit in one pass is a delete and a create, never a move")
    func renameAndEdit() {
        var w = Self.world()
        w.moveLocal("x.txt", "y.txt")
        w.editLocal("y.txt", size: 99)
        let plan = w.plan()
        #expect(plan == [
            .upload(p("y.txt"), condition: .mustNotExist, source: w.stat("y.txt"), item: nil),
            .deleteRemote(p("x.txt"), version: w.baseETag("x.txt"), item: w.id("x.txt")),
        ])
        Self.expectRuns(plan, on: w)
    }

    @Test("renamed on both sides to different names: the local item moves to the remote name")
    func renameOnBothSides() {
        var w = Self.world()
        w.moveLocal("d", "local-name")
        w.moveRemote("d", "remote-name")
        let plan = w.plan()
        #expect(plan == [
            .moveLocal(from: p("local-name"), to: p("remote-name"), expected: w.stat("local-name"), item: w.id("d")),
            .remoteNameWins(item: w.id("d"), localPath: p("local-name"), remotePath: p("remote-name")),
        ])
        Self.expectRuns(plan, on: w)
    }

    @Test("renamed on both sides to the same name: only the row is updated")
    func sameRenameOnBothSides() {
        var w = Self.world()
        w.moveLocal("x.txt", "y.txt")
        w.moveRemote("x.txt", "y.txt")
        #expect(w.plan() == [.record(item: w.id("x.txt"), path: p("y.txt"), kind: .file, local: w.stat("y.txt"),
                                     remote: w.entry("y.txt"))])
    }

    @Test("a file moved into a new local folder: the folder is created first, then one move")
    func moveIntoNewFolder() {
        var w = Self.world()
        w.createLocal("new", .folder)
        w.moveLocal("x.txt", "new/x.txt")
        let plan = w.plan()
        #expect(plan == [
            .createRemoteFolder(p("new"), item: nil),
            .moveRemote(from: p("x.txt"), to: p("new/x.txt"), version: w.etag("x.txt"), item: w.id("x.txt")),
        ])
        Self.expectRuns(plan, on: w)
    }

    @Test("a file moved locally into a folder the remote renamed ends up in the renamed folder")
    func moveIntoRemotelyRenamedFolder() {
        var w = Self.world()
        w.moveLocal("x.txt", "d/x.txt")
        w.moveRemote("d", "e")
        let plan = w.plan()
        #expect(plan == [
            .moveLocal(from: p("d"), to: p("e"), expected: w.stat("d"), item: w.id("d")),
            .moveRemote(from: p("x.txt"), to: p("e/x.txt"), version: w.etag("x.txt"), item: w.id("x.txt")),
        ])
        Self.expectRuns(plan, on: w)
    }

    @Test("a file moved out of a folder that is then deleted: the move runs before the delete")
    func moveOutThenDeleteFolder() {
        var w = Self.world()
        w.moveLocal("d/f0.txt", "kept.txt")
        w.deleteLocal("d")
        let plan = w.plan()
        #expect(plan == [
            .moveRemote(from: p("d/f0.txt"), to: p("kept.txt"), version: w.etag("d/f0.txt"), item: w.id("d/f0.txt")),
            .deleteRemote(p("d"), version: w.etag("d"), item: w.id("d")),
        ])
        Self.expectRuns(plan, on: w)
    }

    @Test("a file renamed over another synced file is an edit of that file and a delete of its old name")
    func renameOverExisting() {
        var w = Self.world()
        w.synced("other.txt")
        let moved = w.local[p("other.txt")]!
        w.deleteLocal("other.txt")
        w.local[p("x.txt")] = moved
        let plan = w.plan()
        #expect(plan == [
            .upload(p("x.txt"), condition: .mustMatch(w.baseETag("x.txt")), source: moved.stat, item: w.id("x.txt")),
            .deleteRemote(p("other.txt"), version: w.baseETag("other.txt"), item: w.id("other.txt")),
        ])
        Self.expectRuns(plan, on: w)
    }

    @Test("a local rename onto a name the remote just created keeps both: the renamed item gets a conflict name")
    func renameOntoRemoteCreate() {
        var w = Self.world()
        w.moveLocal("x.txt", "y.txt")
        w.createRemote("y.txt", size: 3)
        let copy = p(World.copyName("y.txt"))
        let plan = w.plan()
        #expect(plan == [
            .moveRemote(from: p("x.txt"), to: copy, version: w.etag("x.txt"), item: w.id("x.txt")),
            .moveLocal(from: p("y.txt"), to: copy, expected: w.stat("y.txt"), item: w.id("x.txt")),
            .download(p("y.txt"), version: w.etag("y.txt"), replacing: nil, item: nil),
        ])
        Self.expectRuns(plan, on: w)
    }

    @Test("a file replaced by a folder locally: the remote file is deleted before the folder is made")
    func fileReplacedByFolder() {
        var w = Self.world()
        w.deleteLocal("x.txt")
        w.createLocal("x.txt", .folder)
        w.createLocal("x.txt/inner")
        let plan = w.plan()
        #expect(plan == [
            .deleteRemote(p("x.txt"), version: w.baseETag("x.txt"), item: w.id("x.txt")),
            .createRemoteFolder(p("x.txt"), item: nil),
            .upload(p("x.txt/inner"), condition: .mustNotExist, source: w.stat("x.txt/inner"), item: nil),
        ])
        Self.expectRuns(plan, on: w)
    }

    @Test("a local file where the remote made a folder: the local file takes a conflict name")
    func fileAgainstRemoteFolder() {
        var w = Self.world()
        w.createLocal("n")
        w.createRemote("n", .folder)
        w.createRemote("n/inside")
        let plan = w.plan()
        #expect(plan.first == .conflictCopy(ConflictCopy(
            path: p("n"), copy: p(World.copyName("n")), kind: .file, local: w.stat("n"), item: nil,
            baseVersion: nil, remoteVersion: nil, detectedAt: World.now)))
        Self.expectRuns(plan, on: w)
    }
}
