import Foundation
import SyncEngine
import Testing

/// One row of the per-item decision table: a change to the synced world and the plan
/// expected for it (built from the changed world, to read its stats and ETags).
struct MatrixRow: Sendable, CustomTestStringConvertible {
    let name: String
    let change: @Sendable (inout World) -> Void
    let expected: @Sendable (World) -> [SyncAction]
    var testDescription: String { name }

    init(_ name: String, _ change: @escaping @Sendable (inout World) -> Void,
         _ expected: @escaping @Sendable (World) -> [SyncAction]) {
        self.name = name
        self.change = change
        self.expected = expected
    }
}

/// The conflict copy the plan makes of the local file at `path` (the base item `item`).
func conflict(_ w: World, _ path: String, item: String?, remote: String?) -> ConflictCopy {
    let place = p(path)
    return ConflictCopy(path: place, copy: place.parent.child(World.copyName(place.name)), kind: .file,
                        local: w.stat(path), item: item.map(w.id), baseVersion: item.map(w.baseETag),
                        remoteVersion: remote.map(w.etag), detectedAt: World.now)
}

extension RemotePath {
    func child(_ name: String) -> RemotePath { try! appending(name) }
}

@Suite("Reconciliation: the per-item decision")
struct ReconciliationMatrixTests {
    /// x.txt, folder d holding a.txt and b.txt, and a symlink, all in sync.
    static func synced() -> World {
        var w = World()
        w.synced("x.txt")
        w.synced("d", .folder)
        w.synced("d/a.txt")
        w.synced("d/b.txt")
        w.synced("link", .symlink, target: "x.txt")
        return w
    }

    static let rows: [MatrixRow] = [
        MatrixRow("nothing changed: nothing to do", { _ in }, { _ in [] }),
        MatrixRow("new local file: created remotely", { $0.createLocal("new.txt") }) { w in
            [.upload(p("new.txt"), condition: .mustNotExist, source: w.stat("new.txt"), item: nil)]
        },
        MatrixRow("new remote file: downloaded", { $0.createRemote("new.txt") }) { w in
            [.download(p("new.txt"), version: w.etag("new.txt"), replacing: nil, item: nil)]
        },
        MatrixRow("new local folder with a file: folder first", { $0.createLocal("n", .folder); $0.createLocal("n/f") }) { w in
            [.createRemoteFolder(p("n"), item: nil),
             .upload(p("n/f"), condition: .mustNotExist, source: w.stat("n/f"), item: nil)]
        },
        MatrixRow("new remote folder with a file: folder first", { $0.createRemote("n", .folder); $0.createRemote("n/f") }) { w in
            [.createLocalFolder(p("n"), item: nil), .download(p("n/f"), version: w.etag("n/f"), replacing: nil, item: nil)]
        },
        MatrixRow("local edit: uploaded over the base version", { $0.editLocal("x.txt", size: 20) }) { w in
            [.upload(p("x.txt"), condition: .mustMatch(w.baseETag("x.txt")), source: w.stat("x.txt"), item: w.id("x.txt"))]
        },
        MatrixRow("same-size local edit, seen by mtime", { $0.editLocal("x.txt") }) { w in
            [.upload(p("x.txt"), condition: .mustMatch(w.baseETag("x.txt")), source: w.stat("x.txt"), item: w.id("x.txt"))]
        },
        MatrixRow("same-size, same-mtime atomic save, seen by inode", { $0.replaceLocal("x.txt") }) { w in
            [.upload(p("x.txt"), condition: .mustMatch(w.baseETag("x.txt")), source: w.stat("x.txt"), item: w.id("x.txt"))]
        },
        MatrixRow("remote edit: downloaded over the recorded local stat", { $0.editRemote("x.txt") }) { w in
            [.download(p("x.txt"), version: w.etag("x.txt"), replacing: w.stat("x.txt"), item: w.id("x.txt"))]
        },
        MatrixRow("weak and strong ETag of one value: unchanged", {
            $0.remote[p("x.txt")]!.etag = ETag(value: $0.baseETag("x.txt").value, isWeak: true)
        }, { _ in [] }),
        MatrixRow("local delete: deleted remotely, guarded", { $0.deleteLocal("x.txt") }) { w in
            [.deleteRemote(p("x.txt"), version: w.baseETag("x.txt"), item: w.id("x.txt"))]
        },
        MatrixRow("remote delete: deleted locally, guarded", { $0.deleteRemote("x.txt") }) { w in
            [.deleteLocal(p("x.txt"), expected: w.stat("x.txt"), item: w.id("x.txt"))]
        },
        MatrixRow("deleted on both sides: row forgotten", { $0.deleteLocal("x.txt"); $0.deleteRemote("x.txt") }) { w in
            [.forget(w.id("x.txt"))]
        },
        MatrixRow("edit/edit, different bytes: conflict copy of local, remote under the name", {
            $0.editLocal("x.txt", size: 20); $0.editRemote("x.txt", size: 30)
        }) { w in
            [.conflictCopy(conflict(w, "x.txt", item: "x.txt", remote: "x.txt")),
             .download(p("x.txt"), version: w.etag("x.txt"), replacing: nil, item: w.id("x.txt"))]
        },
        MatrixRow("edit/edit to the same size: hashes compared first", {
            $0.editLocal("x.txt", size: 20); $0.editRemote("x.txt", size: 20)
        }) { w in
            [.compareContents(p("x.txt"), local: w.stat("x.txt"), remote: w.etag("x.txt"), item: w.id("x.txt"), ifDifferent: [
                .conflictCopy(conflict(w, "x.txt", item: "x.txt", remote: "x.txt")),
                .download(p("x.txt"), version: w.etag("x.txt"), replacing: nil, item: w.id("x.txt")),
            ])]
        },
        MatrixRow("local edit, remote delete: re-created remotely", { $0.editLocal("x.txt", size: 20); $0.deleteRemote("x.txt") }) { w in
            [.upload(p("x.txt"), condition: .mustNotExist, source: w.stat("x.txt"), item: w.id("x.txt"))]
        },
        MatrixRow("local delete, remote edit: downloaded again", { $0.deleteLocal("x.txt"); $0.editRemote("x.txt") }) { w in
            [.download(p("x.txt"), version: w.etag("x.txt"), replacing: nil, item: w.id("x.txt"))]
        },
        MatrixRow("local rename, remote edit: rename applied remotely, content downloaded", {
            $0.moveLocal("x.txt", "y.txt"); $0.editRemote("x.txt")
        }) { w in
            [.moveRemote(from: p("x.txt"), to: p("y.txt"), version: w.etag("x.txt"), item: w.id("x.txt")),
             .download(p("y.txt"), version: w.etag("x.txt"), replacing: w.stat("y.txt"), item: w.id("x.txt"))]
        },
        MatrixRow("local edit, remote rename: content uploaded to the renamed item", {
            $0.editLocal("x.txt", size: 20); $0.moveRemote("x.txt", "y.txt")
        }) { w in
            [.moveLocal(from: p("x.txt"), to: p("y.txt"), expected: w.stat("x.txt"), item: w.id("x.txt")),
             .upload(p("y.txt"), condition: .mustMatch(w.baseETag("x.txt")), source: w.stat("x.txt"), item: w.id("x.txt"))]
        },
        MatrixRow("renamed to A locally and to B remotely: the remote name wins", {
            $0.moveLocal("x.txt", "a.txt"); $0.moveRemote("x.txt", "b.txt")
        }) { w in
            [.moveLocal(from: p("a.txt"), to: p("b.txt"), expected: w.stat("a.txt"), item: w.id("x.txt")),
             .remoteNameWins(item: w.id("x.txt"), localPath: p("a.txt"), remotePath: p("b.txt"))]
        },
        MatrixRow("create/create, different sizes: conflict copy of local", {
            $0.createLocal("n.txt", size: 5); $0.createRemote("n.txt", size: 6)
        }) { w in
            [.conflictCopy(conflict(w, "n.txt", item: nil, remote: "n.txt")),
             .download(p("n.txt"), version: w.etag("n.txt"), replacing: nil, item: nil)]
        },
        MatrixRow("create/create, same size: hashes compared first", {
            $0.createLocal("n.txt", size: 6); $0.createRemote("n.txt", size: 6)
        }) { w in
            [.compareContents(p("n.txt"), local: w.stat("n.txt"), remote: w.etag("n.txt"), item: nil, ifDifferent: [
                .conflictCopy(conflict(w, "n.txt", item: nil, remote: "n.txt")),
                .download(p("n.txt"), version: w.etag("n.txt"), replacing: nil, item: nil),
            ])]
        },
        MatrixRow("create/create of folders: merged", { $0.createLocal("n", .folder); $0.createRemote("n", .folder) }) { w in
            [.record(item: nil, path: p("n"), kind: .folder, local: w.stat("n"), remote: w.entry("n"))]
        },
        MatrixRow("file added in d locally, d deleted remotely: d re-created with the new file only", {
            $0.createLocal("d/new.txt"); $0.deleteRemote("d")
        }) { w in
            [.createRemoteFolder(p("d"), item: w.id("d")),
             .upload(p("d/new.txt"), condition: .mustNotExist, source: w.stat("d/new.txt"), item: nil),
             .deleteLocal(p("d/a.txt"), expected: w.stat("d/a.txt"), item: w.id("d/a.txt")),
             .deleteLocal(p("d/b.txt"), expected: w.stat("d/b.txt"), item: w.id("d/b.txt"))]
        },
        MatrixRow("file edited in d locally, d deleted remotely: the edit is kept", {
            $0.editLocal("d/a.txt", size: 20); $0.deleteRemote("d")
        }) { w in
            [.createRemoteFolder(p("d"), item: w.id("d")),
             .upload(p("d/a.txt"), condition: .mustNotExist, source: w.stat("d/a.txt"), item: w.id("d/a.txt")),
             .deleteLocal(p("d/b.txt"), expected: w.stat("d/b.txt"), item: w.id("d/b.txt"))]
        },
        MatrixRow("d deleted locally, file added in d remotely: d re-created locally with it", {
            $0.deleteLocal("d"); $0.createRemote("d/new.txt")
        }) { w in
            [.createLocalFolder(p("d"), item: w.id("d")),
             .download(p("d/new.txt"), version: w.etag("d/new.txt"), replacing: nil, item: nil),
             .deleteRemote(p("d/a.txt"), version: w.baseETag("d/a.txt"), item: w.id("d/a.txt")),
             .deleteRemote(p("d/b.txt"), version: w.baseETag("d/b.txt"), item: w.id("d/b.txt"))]
        },
        MatrixRow("d deleted locally, a file in d edited remotely: d comes back with that file only", {
            $0.deleteLocal("d"); $0.editRemote("d/a.txt")
        }) { w in
            [.createLocalFolder(p("d"), item: w.id("d")),
             .download(p("d/a.txt"), version: w.etag("d/a.txt"), replacing: nil, item: w.id("d/a.txt")),
             .deleteRemote(p("d/b.txt"), version: w.baseETag("d/b.txt"), item: w.id("d/b.txt"))]
        },
        MatrixRow("folder renamed locally, a file in it edited remotely: one move, then the download", {
            $0.moveLocal("d", "e"); $0.editRemote("d/a.txt")
        }) { w in
            [.moveRemote(from: p("d"), to: p("e"), version: w.etag("d"), item: w.id("d")),
             .download(p("e/a.txt"), version: w.etag("d/a.txt"), replacing: w.stat("e/a.txt"), item: w.id("d/a.txt"))]
        },
        MatrixRow("folder renamed remotely, a file in it edited locally: one move, then the upload", {
            $0.moveRemote("d", "e"); $0.editLocal("d/a.txt", size: 20)
        }) { w in
            [.moveLocal(from: p("d"), to: p("e"), expected: w.stat("d"), item: w.id("d")),
             .upload(p("e/a.txt"), condition: .mustMatch(w.baseETag("d/a.txt")), source: w.stat("d/a.txt"), item: w.id("d/a.txt"))]
        },
        MatrixRow("folder deleted remotely: one local delete, not one per child", { $0.deleteRemote("d") }) { w in
            [.deleteLocal(p("d"), expected: w.stat("d"), item: w.id("d"))]
        },
        MatrixRow("folder deleted locally: one remote delete, not one per child", { $0.deleteLocal("d") }) { w in
            [.deleteRemote(p("d"), version: w.etag("d"), item: w.id("d"))]
        },
        MatrixRow("folder deleted on both sides: one row forgotten", { $0.deleteLocal("d"); $0.deleteRemote("d") }) { w in
            [.forget(w.id("d"))]
        },
        MatrixRow("symlink retargeted locally", {
            $0.local[p("link")]!.symlinkTarget = "d"; $0.local[p("link")]!.stat.inode = 999
        }) { w in
            [.createRemoteSymlink(p("link"), target: "d", condition: .mustMatch(w.baseETag("link")), item: w.id("link"))]
        },
        MatrixRow("symlink retargeted remotely", {
            $0.remote[p("link")]!.symlinkTarget = "d"; $0.editRemote("link")
        }) { w in
            [.createLocalSymlink(p("link"), target: "d", replacing: w.stat("link"), item: w.id("link"))]
        },
    ]

    @Test("each row plans the expected actions, and the plan runs and converges", arguments: rows)
    func row(_ row: MatrixRow) {
        var world = Self.synced()
        row.change(&world)
        let plan = world.plan()
        #expect(plan == row.expected(world))
        let run = PlanSimulator.run(plan, on: world)
        #expect(run.problems == [])
        #expect(run.converged)
    }

    @Test("two remote names that differ only in Unicode normalisation are two items, both kept")
    func normalisationForms() {
        var world = World()
        let nfc = "caf\u{00E9}", nfd = "cafe\u{0301}"
        world.createRemote(nfc, size: 1)
        world.createRemote(nfd, size: 2)
        let plan = world.plan()
        #expect(Set(plan.map { Array($0.path.name.utf8) }) == [Array(nfc.utf8), Array(nfd.utf8)])
        #expect(plan.count == 2 && plan.allSatisfy { if case .download = $0 { true } else { false } })
    }

    @Test("a file never uploaded before a crash is uploaded as new, not treated as deleted remotely")
    func pendingUpload() {
        var world = World()
        world.synced("x.txt")
        world.base[0].remoteETag = nil
        world.base[0].remoteFileID = nil
        world.deleteRemote("x.txt")
        #expect(world.plan() == [.upload(p("x.txt"), condition: .mustNotExist, source: world.stat("x.txt"), item: world.id("x.txt"))])
    }

    @Test("a file never written locally is downloaded, not treated as deleted locally")
    func pendingDownload() {
        var world = World()
        world.synced("x.txt")
        world.base[0].local = nil
        world.deleteLocal("x.txt")
        #expect(world.plan() == [.download(p("x.txt"), version: world.etag("x.txt"), replacing: nil, item: world.id("x.txt"))])
    }
}
