import Foundation
import SyncEngine
import Testing

/// `Reconciler.agrees`: a pass skips the planner when the local side is exactly as the rows
/// say and the remote walk found nothing new. Every change the planner would act on must
/// read as a disagreement; and whenever it reads as agreement, the plan must be empty.
@Suite("The local side agrees with the rows")
struct AgreementTests {
    static func path(_ text: String) -> RemotePath { try! RemotePath(string: text) }
    static func stat(_ inode: UInt64, _ size: Int64, _ mtime: Int64, birth: Int64 = 0) -> LocalStat {
        LocalStat(inode: inode, size: size, modificationTimeNanoseconds: mtime, birthNanoseconds: birth)
    }

    /// sub (inode 10) holding a.txt (11), link (12, to "a.txt"), and top.txt (20), all synced.
    static let rows: [ItemRecord] = [
        ItemRecord(id: .root, parentID: nil, name: "", kind: .folder),
        ItemRecord(id: ItemIdentifier("sub"), parentID: .root, name: "sub", kind: .folder, local: stat(10, 0, 1)),
        ItemRecord(id: ItemIdentifier("a"), parentID: ItemIdentifier("sub"), name: "a.txt", kind: .file, size: 1,
                   remoteETag: ETag(value: "e-a"), local: stat(11, 1, 2, birth: 5)),
        ItemRecord(id: ItemIdentifier("l"), parentID: ItemIdentifier("sub"), name: "link", kind: .symlink,
                   remoteETag: ETag(value: "e-l"), symlinkTarget: "a.txt", local: stat(12, 5, 3)),
        ItemRecord(id: ItemIdentifier("t"), parentID: .root, name: "top.txt", kind: .file, size: 1,
                   remoteETag: ETag(value: "e-t"), local: stat(20, 1, 4)),
    ]

    static var recorded: [RemotePath: ItemRecord] { Reconciler.paths(of: rows) }

    /// What a scan sees when nothing changed (the folder's mtime moved: folders count by existence).
    static var unchanged: [RemotePath: LocalObservation] {
        [
            path("sub"): LocalObservation(kind: .folder, size: 0, stat: stat(10, 0, 99)),
            path("sub/a.txt"): LocalObservation(kind: .file, size: 1, stat: stat(11, 1, 2, birth: 5)),
            path("sub/link"): LocalObservation(kind: .symlink, size: 5, stat: stat(12, 5, 3), symlinkTarget: "a.txt"),
            path("top.txt"): LocalObservation(kind: .file, size: 1, stat: stat(20, 1, 4, birth: 8)),
        ]
    }

    static var remote: [RemotePath: RemoteEntry] {
        var result: [RemotePath: RemoteEntry] = [:]
        for (path, record) in recorded where !path.isRoot {
            result[path] = RemoteEntry(path: path, kind: record.kind, size: record.size,
                                       etag: record.kind == .folder ? nil : record.remoteETag, symlinkTarget: record.symlinkTarget)
        }
        return result
    }

    static func plan(_ local: [RemotePath: LocalObservation]) -> [SyncAction] {
        Reconciler.plan(base: rows, local: local, remote: remote, now: .distantPast, host: "h")
    }

    @Test("nothing changed: agrees, and the plan is empty")
    func unchanged() {
        #expect(Reconciler.agrees(Self.unchanged, with: Self.recorded))
        #expect(Self.plan(Self.unchanged).isEmpty)
        var withRoot = Self.unchanged
        withRoot[.root] = LocalObservation(kind: .folder, size: 0, stat: Self.stat(1, 0, 0))
        #expect(Reconciler.agrees(withRoot, with: Self.recorded), "the root is not an item")
    }

    @Test("every change the planner acts on disagrees", arguments: [
        "mtime only", "same-size edit", "size", "new birth (inode reused)", "new file", "deleted file",
        "renamed by inode", "folder replaced", "symlink target", "kind",
    ])
    func changed(_ change: String) {
        var local = Self.unchanged
        let a = Self.path("sub/a.txt")
        switch change {
        case "mtime only": local[a]!.stat.modificationTimeNanoseconds += 1
        case "same-size edit": local[a]!.stat.modificationTimeNanoseconds = 77
        case "size": local[a]!.stat.size = 2; local[a]!.size = 2
        case "new birth (inode reused)": local[a]!.stat.birthNanoseconds = 6
        case "new file": local[Self.path("sub/b.txt")] = LocalObservation(kind: .file, size: 1, stat: Self.stat(30, 1, 1))
        case "deleted file": local[Self.path("top.txt")] = nil
        case "renamed by inode": local[Self.path("sub/renamed.txt")] = local.removeValue(forKey: a)
        case "folder replaced": local[Self.path("sub")]!.stat.inode = 40
        case "symlink target": local[Self.path("sub/link")]!.symlinkTarget = "b.txt"
        default: local[a]!.kind = .symlink
        }
        #expect(!Reconciler.agrees(local, with: Self.recorded), "\(change)")
        // A folder counts by existence: one replaced by another of the same name is kept
        // (the planner finds nothing to do), but it is not the recorded folder either.
        if change != "folder replaced" { #expect(!Self.plan(local).isEmpty, "\(change): the planner acts on it") }
    }

    @Test("a row with no local stat (never on disk) is never taken as agreeing")
    func rowWithoutLocal() {
        var rows = Self.recorded
        rows[Self.path("top.txt")]!.local = nil
        #expect(!Reconciler.agrees(Self.unchanged, with: rows))
    }
}
