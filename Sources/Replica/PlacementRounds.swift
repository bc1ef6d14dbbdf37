// Whole downloads made durable and put in place in rounds (issue 16 item 4). A download's
// bytes are written without an fsync (`TransferSlot.callerSyncs`) and the file is handed
// here: a round takes every file handed over while the round before it ran, makes their
// bytes durable with one `syncfs` of the sync folder's file system, puts each in place
// (`install`, with all its guards) without its folder's fsync, and makes the renames
// durable with a second `syncfs`. A round of N files costs two journal commits instead of
// N fsyncs of files and up to N of folders, each a commit of its own when they come one
// after another (a 10 000-file download committed ext4's journal about 8 000 times; in
// rounds, with their records, about 1 600).
// Nothing is recorded before its bytes and its name are durable: the runner records a
// file once its placement returned.
//
// `syncfs` reports a write-back error anywhere on the file system since the descriptor it
// is given was opened, once: to the first call after it. That descriptor, the anchor (the
// sync folder), is opened before a download writes its file and kept while any download
// placed here is under way. A round's sync writes back the files of later rounds too, and
// an error reported to it may be theirs: so every failed sync counts, and a file fails
// when any sync failed after it began (`Job.failuresBefore`), not only its round's. With
// no download under way the anchor is closed: an idle daemon keeps no file system busy (a
// removable disk can be unmounted, a removed sync folder is freed).
// Rounds are used only where `syncfs` is known to make files durable and to report their
// write-back errors: ext4, XFS, Btrfs and F2FS, on Linux 5.8 or later. A file elsewhere (a
// FUSE mount, where syncfs does not reach the server; an older kernel; another file system
// than the sync folder's) is fsynced by the store as it is written, and its folder after
// its rename.
import Foundation
import Glibc
import Synchronization
import SyncEngine
import SystemCalls

/// The rounds of one sync folder.
final class PlacementRounds: Sendable {
    /// The sync folder, open while downloads are under way.
    struct Anchor: Sendable {
        let descriptor: Int32
        /// Its file system, when rounds may sync it (nil: every file is synced alone).
        let device: UInt64?
    }

    struct Job: Sendable {
        let temporary: URL
        let path: RemotePath
        let replacing: LocalStat?
        let modificationDate: Date?
        let anchor: Anchor
        /// How many syncs had failed when the download began writing.
        let failuresBefore: Int
        /// Synced on its own: the store fsynced it, and its folder is fsynced after it.
        let apart: Bool
    }

    private let folder: LocalFolder
    private let rounds: BatchRounds<Job, Result<LocalStat, ProviderError>>
    private let anchor = Mutex<(current: Anchor?, users: Int)>((nil, 0))
    /// How many syncs failed so far.
    private let failures = FailedSyncs()

    final class FailedSyncs: Sendable {
        private let count = Atomic<Int>(0)
        var value: Int { count.load(ordering: .sequentiallyConsistent) }
        func add() { count.wrappingAdd(1, ordering: .sequentiallyConsistent) }
    }

    /// The rounds of `folder`; `sync` is `syncfs` (another one in tests).
    init(folder: LocalFolder, sync: @escaping @Sendable (Int32) -> Int32 = FileSystemSync.sync) {
        self.folder = folder
        let failures = failures
        rounds = BatchRounds(gap: PlanRunner.roundGap) { jobs in
            Self.place(jobs, in: folder, failures: failures) { descriptor in
                let failure = sync(descriptor)
                if failure != 0 { failures.add() }
                return failure
            }
        }
    }

    /// Writes a download's file with `write` and puts it in place at `path` as
    /// `LocalFolder.install` does, in the next round; returns what `write` returned and the
    /// installed file's stat, once its bytes and its name are durable. `write` is told
    /// whether the round syncs the file (then it writes `temporary` without an fsync) or it
    /// must fsync it itself (a folder on another file system, or one rounds cannot sync).
    func bringDown<T: Sendable>(_ temporary: URL, at path: RemotePath, replacing: LocalStat?, modificationDate: Date?,
                                write: (_ roundSyncs: Bool) async throws(ProviderError) -> T) async throws(ProviderError) -> (T, LocalStat) {
        let anchor = hold()
        defer { release() }
        let failuresBefore = failures.value
        var st = stat()
        let folder = temporary.deletingLastPathComponent().path
        let roundSyncs = anchor.device != nil && stat(folder, &st) == 0 && UInt64(st.st_dev) == anchor.device
        let written = try await write(roundSyncs)
        let job = Job(temporary: temporary, path: path, replacing: replacing, modificationDate: modificationDate, anchor: anchor,
                      failuresBefore: failuresBefore, apart: !roundSyncs)
        return (written, try await rounds.submit(job).get())
    }

    /// The anchor, opened when no download holds it yet.
    private func hold() -> Anchor {
        anchor.withLock { state in
            state.users += 1
            if let current = state.current { return current }
            let descriptor = open(folder.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            var st = stat()
            let syncable = descriptor >= 0 && Self.syncfsMakesDurable(descriptor) && fstat(descriptor, &st) == 0
            let opened = Anchor(descriptor: descriptor, device: syncable ? UInt64(st.st_dev) : nil)
            state.current = opened
            return opened
        }
    }

    /// Closes the anchor when the last download holding it is done.
    private func release() {
        anchor.withLock { state in
            state.users -= 1
            guard state.users == 0, let current = state.current else { return }
            if current.descriptor >= 0 { close(current.descriptor) }
            state.current = nil
        }
    }

    /// One round; on one of `OffPool`'s threads. Every job holds its anchor until the
    /// round returns, so the anchor is open, and it is the same for all of them.
    private static func place(_ jobs: [Job], in folder: LocalFolder, failures: FailedSyncs,
                              sync: (Int32) -> Int32) -> [Result<LocalStat, ProviderError>] {
        var outcomes = [Result<LocalStat, ProviderError>?](repeating: nil, count: jobs.count)
        let shared = jobs.indices.filter { !jobs[$0].apart }
        // Not failed yet: not placed, or placed.
        func standing(_ index: Int) -> Bool {
            guard let outcome = outcomes[index] else { return true }
            if case .success = outcome { return true }
            return false
        }
        // A failed sync fails every file of the round not failed yet.
        func syncShared(_ what: (Int) -> String) {
            guard let first = shared.first else { return }
            let failure = sync(jobs[first].anchor.descriptor)
            guard failure != 0 else { return }
            for index in shared where standing(index) {
                outcomes[index] = .failure(LocalFolder.error(failure, what(index)))
            }
        }
        // A file written while any sync failed may be the one whose write-back failed.
        func failWritten() {
            let failed = failures.value
            for index in shared where jobs[index].failuresBefore != failed && standing(index) {
                outcomes[index] = .failure(ProviderError(.cannotSynchronize, "a write-back on the file system of \(folder.root) "
                    + "failed while \(folder.absolute(jobs[index].path)) was written; it is downloaded again"))
            }
        }
        syncShared { "cannot write \(jobs[$0].temporary.path)" }
        failWritten()
        for (index, job) in jobs.enumerated() where outcomes[index] == nil {
            outcomes[index] = Result { () throws(ProviderError) -> LocalStat in
                try folder.install(job.temporary, at: job.path, replacing: job.replacing,
                                   modificationDate: job.modificationDate, syncingFolder: job.apart)
            }
        }
        if shared.contains(where: standing) {  // every outcome is known here: one was placed
            syncShared { "cannot make \(folder.absolute(jobs[$0].path)) durable" }
        }
        failWritten()
        return outcomes.map { $0! }
    }

    /// True where `syncfs` on `descriptor` makes every file of its file system durable and
    /// reports their write-back errors: ext4, XFS, Btrfs and F2FS, on Linux 5.8 or later.
    static func syncfsMakesDurable(_ descriptor: Int32) -> Bool {
        guard let type = FileSystemSync.type(of: descriptor), durableTypes.contains(type) else { return false }
        var name = utsname()
        guard uname(&name) == 0 else { return false }
        let release = withUnsafeBytes(of: name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let numbers = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
        return numbers.count == 2 && (numbers[0], numbers[1]) >= (5, 8)
    }

    /// The magic numbers of ext2/3/4, XFS, Btrfs and F2FS (`statfs(2)`).
    static let durableTypes: Set<UInt64> = [0xEF53, 0x5846_5342, 0x9123_683E, 0xF2F5_2010]
}
