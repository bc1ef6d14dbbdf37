import SyncEngine
import Testing

@Suite("Reconciliation: executable order")
struct ActionOrderTests {
    @Test("an initial upload of a nested tree creates each folder before what it holds")
    func nestedUpload() {
        var w = World()
        for folder in ["a", "a/b", "a/b/c", "z"] { w.createLocal(folder, .folder) }
        for file in ["a/1", "a/b/2", "a/b/c/3", "z/4", "top"] { w.createLocal(file) }
        let plan = w.plan()
        #expect(plan.map(\.path) == ["a", "a/1", "a/b", "a/b/2", "a/b/c", "a/b/c/3", "top", "z", "z/4"].map(p))
        #expect(PlanSimulator.run(plan, on: w).problems == [])
    }

    @Test("an initial download of a nested tree creates each local folder before what it holds")
    func nestedDownload() {
        var w = World()
        for folder in ["a", "a/b"] { w.createRemote(folder, .folder) }
        for file in ["a/b/deep", "a/1"] { w.createRemote(file) }
        let plan = w.plan()
        #expect(plan.map(\.path) == ["a", "a/1", "a/b", "a/b/deep"].map(p))
        let run = PlanSimulator.run(plan, on: w)
        #expect(run.problems == [] && run.converged)
    }

    @Test("a folder renamed locally moves before the uploads into its new place")
    func moveBeforeUploadsInside() {
        var w = World()
        w.synced("d", .folder)
        w.synced("d/old")
        w.moveLocal("d", "e")
        w.createLocal("e/new")
        w.createLocal("e/sub", .folder)
        w.createLocal("e/sub/deeper")
        let plan = w.plan()
        #expect(plan.first == .moveRemote(from: p("d"), to: p("e"), version: w.etag("d"), item: w.id("d")))
        #expect(plan.count == 4)
        #expect(PlanSimulator.run(plan, on: w).problems == [])
    }

    @Test("deletes come last, after every create, move and transfer")
    func deletesLast() {
        var w = World()
        for name in ["a", "m", "z"] { w.synced(name) }
        w.deleteLocal("a")
        w.deleteRemote("z")
        w.createLocal("b")
        w.createRemote("y")
        w.editLocal("m", size: 1)
        let plan = w.plan()
        #expect(plan.suffix(2).allSatisfy { $0.isDeletion })
        #expect(plan.prefix(3).allSatisfy { !$0.isDeletion })
        let run = PlanSimulator.run(plan, on: w)
        #expect(run.problems == [] && run.converged)
    }

    @Test("mass deletions are plain deletes here, one per top item")
    func massDelete() {
        var w = World()
        for n in 0..<50 { w.synced("f\(n)") }
        for n in 0..<50 { w.deleteLocal("f\(n)") }
        let plan = w.plan()
        #expect(plan.count == 50 && plan.allSatisfy { $0.isDeletion })
    }

    @Test("mixed changes across a tree run front to back and leave both sides equal")
    func mixedScenario() {
        var w = World()
        for folder in ["docs", "docs/old", "media"] { w.synced(folder, .folder) }
        for file in ["docs/a.txt", "docs/old/b.txt", "media/c.jpg", "media/d.jpg", "readme"] { w.synced(file) }
        w.moveLocal("docs/old", "archive")
        w.createLocal("archive/new.txt")
        w.moveRemote("media/c.jpg", "docs/c.jpg")
        w.editRemote("docs/a.txt")
        w.deleteLocal("media")
        w.createRemote("media/e.jpg")
        w.editLocal("readme", size: 3)
        w.editRemote("readme", size: 4)
        let plan = w.plan()
        let run = PlanSimulator.run(plan, on: w)
        #expect(run.problems == [])
        #expect(run.converged)
        #expect(plan.contains(.createLocalFolder(p("media"), item: w.id("media"))))
        #expect(plan.contains(.deleteRemote(p("media/d.jpg"), version: w.baseETag("media/d.jpg"), item: w.id("media/d.jpg"))))
        // Moved remotely but deleted locally: a move counts as a change, so it comes back.
        #expect(plan.contains(.download(p("docs/c.jpg"), version: w.etag("docs/c.jpg"), replacing: nil, item: w.id("media/c.jpg"))))
    }
}
