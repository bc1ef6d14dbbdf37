import Foundation
import Glibc
import Synchronization
import SyncEngine
import Testing
@testable import Replica

/// True when rounds sync files in the temporary directory (else every file is synced alone
/// and these tests have nothing to test).
func roundsSyncHere() -> Bool {
    let fd = open(NSTemporaryDirectory(), O_RDONLY | O_DIRECTORY)
    defer { if fd >= 0 { close(fd) } }
    return fd >= 0 && PlacementRounds.syncfsMakesDurable(fd)
}

/// Placements in rounds fail what a failed file-system sync may have lost: the round's
/// files when its sync fails, and a file written while an earlier round's sync failed
/// (`syncfs` reports an error once, to whichever round asks first).
@Suite("Placement rounds", .timeLimit(.minutes(1)),
       .enabled(if: roundsSyncHere(), "the temporary directory's file system is not one rounds sync (ext4, XFS, Btrfs, F2FS)"))
struct PlacementRoundsTests {

    func p(_ s: String) -> RemotePath { try! RemotePath(string: s) }

    /// A sync that answers from `answers` in turn (0 after them), counting its calls.
    final class Syncs: Sendable {
        private let state: Mutex<(answers: [Int32], calls: Int)>
        init(_ answers: [Int32]) { state = Mutex((answers, 0)) }
        var calls: Int { state.withLock { $0.calls } }
        func sync(_ fd: Int32) -> Int32 {
            state.withLock { state in
                state.calls += 1
                return state.answers.isEmpty ? 0 : state.answers.removeFirst()
            }
        }
    }

    func world(_ answers: [Int32]) throws -> (PlacementRounds, LocalFolder, Syncs, String) {
        let root = NSTemporaryDirectory() + "tidesync-rounds-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let folder = LocalFolder(root: root)
        let syncs = Syncs(answers)
        return (PlacementRounds(folder: folder, sync: { syncs.sync($0) }), folder, syncs, root)
    }

    func place(_ rounds: PlacementRounds, _ folder: LocalFolder, _ name: String,
               whileWriting: @Sendable () async -> Void = {}) async throws(ProviderError) -> Bool {
        let temporary = folder.temporaryURL(beside: p(name))
        let (roundSyncs, _) = try await rounds.bringDown(temporary, at: p(name), replacing: nil, modificationDate: nil) {
            roundSyncs async throws(ProviderError) -> Bool in
            await whileWriting()
            FileManager.default.createFile(atPath: temporary.path, contents: Data(name.utf8))
            return roundSyncs
        }
        return roundSyncs
    }

    @Test("a failed sync of the round's bytes fails its files; nothing is put in place")
    func bytesSyncFails() async throws {
        let (rounds, folder, syncs, root) = try world([EIO])
        defer { try? FileManager.default.removeItem(atPath: root) }
        await #expect(throws: ProviderError.self) { _ = try await place(rounds, folder, "a.txt") }
        #expect(syncs.calls == 1 && !FileManager.default.fileExists(atPath: root + "/a.txt"))
        #expect(try await place(rounds, folder, "b.txt"), "the folder is synced by rounds here")
        #expect(FileManager.default.fileExists(atPath: root + "/b.txt"))
    }

    @Test("a failed sync of the renames fails the round's files, which are in place but not recorded")
    func renamesSyncFails() async throws {
        let (rounds, folder, syncs, root) = try world([0, EIO])
        defer { try? FileManager.default.removeItem(atPath: root) }
        await #expect(throws: ProviderError.self) { _ = try await place(rounds, folder, "a.txt") }
        #expect(syncs.calls == 2 && FileManager.default.fileExists(atPath: root + "/a.txt"))
    }

    @Test("a file written while an earlier round's sync failed fails, though its own round's syncs succeed")
    func laterFileFails() async throws {
        let (rounds, folder, syncs, root) = try world([EIO])
        defer { try? FileManager.default.removeItem(atPath: root) }
        let firstDone = Mutex(false)
        let started = Mutex(false)
        // b.txt begins writing (holds the anchor) before a.txt's round fails, and ends after.
        let second = Task { () async throws(ProviderError) -> Bool in
            try await place(rounds, folder, "b.txt") {
                started.withLock { $0 = true }
                while !firstDone.withLock({ $0 }) { await Task.yield(); usleep(1000) }
            }
        }
        while !started.withLock({ $0 }) { await Task.yield(); usleep(1000) }
        await #expect(throws: ProviderError.self) { _ = try await place(rounds, folder, "a.txt") }
        firstDone.withLock { $0 = true }
        await #expect(throws: ProviderError.self) { _ = try await second.value }
        #expect(syncs.calls == 2, "b.txt's own round synced its bytes, without failing, and put nothing in place")
        #expect(!FileManager.default.fileExists(atPath: root + "/b.txt"))
        // One written after the failure is placed.
        #expect(try await place(rounds, folder, "c.txt") && FileManager.default.fileExists(atPath: root + "/c.txt"))
    }
}
