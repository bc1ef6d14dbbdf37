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
// is given was opened. That descriptor, the anchor (the sync folder), is opened before a
// download writes its file and kept while any download placed here is under way, so a
// failed write-back of a round's file fails that round (so does one of another program's
// files there: the round's files come down again at the next pass). With no download
// under way it is closed: an idle daemon keeps no file system busy (a removable disk can
// be unmounted). A file on another file system (a mount inside the sync folder) is fsynced
// on its own, and its folder after it.
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
        /// Its file system (nil when it could not be opened: every file is synced alone).
        let device: UInt64?
    }

    struct Job: Sendable {
        let temporary: URL
        let path: RemotePath
        let replacing: LocalStat?
        let modificationDate: Date?
        let anchor: Anchor
    }

    private let folder: LocalFolder
    private let rounds: BatchRounds<Job, Result<LocalStat, ProviderError>>
    private let anchor = Mutex<(current: Anchor?, users: Int)>((nil, 0))

    init(folder: LocalFolder) {
        self.folder = folder
        rounds = BatchRounds(gap: PlanRunner.roundGap) { jobs in Self.place(jobs, in: folder) }
    }

    /// Writes a download's file with `write` (which writes `temporary` without an fsync) and
    /// puts it in place at `path` as `LocalFolder.install` does, in the next round; returns
    /// what `write` returned and the installed file's stat, once its bytes and its name
    /// are durable.
    func bringDown<T: Sendable>(_ temporary: URL, at path: RemotePath, replacing: LocalStat?, modificationDate: Date?,
                                write: () async throws(ProviderError) -> T) async throws(ProviderError) -> (T, LocalStat) {
        let anchor = hold()
        defer { release() }
        let written = try await write()
        let job = Job(temporary: temporary, path: path, replacing: replacing, modificationDate: modificationDate, anchor: anchor)
        return (written, try await rounds.submit(job).get())
    }

    /// The anchor, opened when no download holds it yet.
    private func hold() -> Anchor {
        anchor.withLock { state in
            state.users += 1
            if let current = state.current { return current }
            let descriptor = open(folder.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            var st = stat()
            let opened = Anchor(descriptor: descriptor, device: descriptor >= 0 && fstat(descriptor, &st) == 0 ? UInt64(st.st_dev) : nil)
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
    private static func place(_ jobs: [Job], in folder: LocalFolder) -> [Result<LocalStat, ProviderError>] {
        var outcomes = [Result<LocalStat, ProviderError>?](repeating: nil, count: jobs.count)
        // Files on another file system than their anchor's are synced on their own.
        let apart = Set(jobs.indices.filter { index in
            var st = stat()
            return jobs[index].anchor.device == nil
                || (stat(jobs[index].temporary.path, &st) == 0 && UInt64(st.st_dev) != jobs[index].anchor.device)
        })
        for index in apart {
            let failure = fsyncFile(jobs[index].temporary.path)
            if failure != 0 { outcomes[index] = .failure(LocalFolder.error(failure, "cannot write \(jobs[index].temporary.path)")) }
        }
        let shared = jobs.indices.filter { !apart.contains($0) }
        func syncShared(_ what: (Int) -> String) {
            guard let first = shared.first else { return }
            let failure = FileSystemSync.sync(jobs[first].anchor.descriptor)
            guard failure != 0 else { return }
            for index in shared where outcomes[index].map({ if case .success = $0 { true } else { false } }) ?? true {
                outcomes[index] = .failure(LocalFolder.error(failure, what(index)))
            }
        }
        syncShared { "cannot write \(jobs[$0].temporary.path)" }
        for (index, job) in jobs.enumerated() where outcomes[index] == nil {
            outcomes[index] = Result { () throws(ProviderError) -> LocalStat in
                try folder.install(job.temporary, at: job.path, replacing: job.replacing,
                                   modificationDate: job.modificationDate, syncingFolder: apart.contains(index))
            }
        }
        if shared.contains(where: { if case .success = outcomes[$0] { true } else { false } }) {
            syncShared { "cannot make \(folder.absolute(jobs[$0].path)) durable" }
        }
        return outcomes.map { $0! }
    }

    /// fsync of the file at `path`: 0, or an errno.
    private static func fsyncFile(_ path: String) -> Int32 {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return errno }
        defer { close(fd) }
        return fsync(fd) == 0 ? 0 : errno
    }
}
