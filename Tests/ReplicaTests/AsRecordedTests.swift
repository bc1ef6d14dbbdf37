@testable import Replica
import Foundation
import SyncEngine
import Testing

/// The pure part of a pass that meets a folder it cannot read: both sides of the folder's
/// subtree become what the state DB recorded, so the planner finds nothing to do there.
@Suite("Folders that cannot be read: both sides as recorded")
struct AsRecordedTests {
    static func path(_ text: String) -> RemotePath { try! RemotePath(string: text) }

    /// sub (inode 10) with a.txt (11), and top.txt (20) beside it, all synced.
    static let recorded: [RemotePath: ItemRecord] = [
        path("sub"): ItemRecord(id: ItemIdentifier("sub"), parentID: .root, name: "sub", kind: .folder,
                                local: LocalStat(inode: 10, size: 0, modificationTimeNanoseconds: 1)),
        path("sub/a.txt"): ItemRecord(id: ItemIdentifier("a"), parentID: ItemIdentifier("sub"), name: "a.txt", kind: .file, size: 1,
                                      remoteETag: ETag(value: "e-a"), local: LocalStat(inode: 11, size: 1, modificationTimeNanoseconds: 2)),
        path("top.txt"): ItemRecord(id: ItemIdentifier("t"), parentID: .root, name: "top.txt", kind: .file, size: 1,
                                    remoteETag: ETag(value: "e-t"), local: LocalStat(inode: 20, size: 1, modificationTimeNanoseconds: 3)),
    ]

    @Test("below an unreadable folder both sides are as recorded; elsewhere what was seen stays")
    func subtree() {
        let seenTop = LocalObservation(kind: .file, size: 5, stat: LocalStat(inode: 20, size: 5, modificationTimeNanoseconds: 9))
        // The scan saw the folder but nothing in it; the server lists a new file there.
        var local: [RemotePath: LocalObservation] = [
            Self.path("sub"): LocalObservation(kind: .folder, size: 0, stat: LocalStat(inode: 10, size: 0, modificationTimeNanoseconds: 7)),
            Self.path("top.txt"): seenTop,
        ]
        var remote: [RemotePath: RemoteEntry] = [
            Self.path("sub"): RemoteEntry(path: Self.path("sub"), kind: .folder, size: 0, etag: nil),
            Self.path("sub/new.txt"): RemoteEntry(path: Self.path("sub/new.txt"), kind: .file, size: 3, etag: ETag(value: "e-n")),
            Self.path("top.txt"): RemoteEntry(path: Self.path("top.txt"), kind: .file, size: 1, etag: ETag(value: "e-t")),
        ]
        let folders = [UnreadableFolder(path: Self.path("sub"), side: .local, reason: "permission denied")]
        let unknown = SyncPass.unknownSubtrees(folders, local: local, recorded: Self.recorded)
        SyncPass.takeAsRecorded(unknown, local: &local, remote: &remote, recorded: Self.recorded)

        #expect(local[Self.path("sub/a.txt")]?.stat == Self.recorded[Self.path("sub/a.txt")]?.local, "not read as deleted")
        #expect(remote[Self.path("sub/a.txt")]?.etag == ETag(value: "e-a"))
        #expect(remote[Self.path("sub/new.txt")] == nil, "nothing is downloaded into it")
        #expect(local[Self.path("top.txt")] == seenTop, "outside it, what was seen stays")
        let plan = Reconciler.plan(base: Array(Self.recorded.values) + [ItemRecord(id: .root, parentID: nil, name: "", kind: .folder)],
                                   local: local, remote: remote, now: .distantPast, host: "h")
        #expect(plan.allSatisfy { !$0.isDeletion }, "\(plan)")
        #expect(plan.count == 1, "only top.txt's edit is synced: \(plan)")
    }

    @Test("a synced folder moved while unreadable keeps its recorded place too")
    func movedWhileUnreadable() {
        let local: [RemotePath: LocalObservation] = [
            Self.path("renamed"): LocalObservation(kind: .folder, size: 0, stat: LocalStat(inode: 10, size: 0, modificationTimeNanoseconds: 7)),
        ]
        let folders = [UnreadableFolder(path: Self.path("renamed"), side: .local, reason: "permission denied")]
        let unknown = SyncPass.unknownSubtrees(folders, local: local, recorded: Self.recorded)
        #expect(unknown.contains(Self.path("sub/a.txt")) && unknown.contains(Self.path("renamed")))
        #expect(!unknown.contains(Self.path("top.txt")))
    }
}
