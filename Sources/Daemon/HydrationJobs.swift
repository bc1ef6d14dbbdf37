// The hydrations `tidesync hydrate` and `tidesync pin` start: each a numbered job that
// fetches its files one after the other in a task of its own, its progress readable at any
// time by `progress` requests. Isolation: the table is behind one `Mutex`, a leaf lock; the
// job's task writes its own entry, control threads read copies. Finished jobs are kept
// (the last `kept` of them) so a client that polls late still reads how they ended.
import Control
import Foundation
import SyncEngine
import Synchronization

/// The hydration jobs of the daemon.
final class HydrationJobs: Sendable {
    private let table = Mutex(Table())
    /// Finished jobs kept for their clients.
    static let kept = 64

    private struct Table {
        var next = 1
        var jobs: [Int: HydrationJob] = [:]
    }

    /// Starts a job of `work`; returns it as it starts.
    func start(_ work: [DomainFiles.Work]) -> HydrationJob {
        let job = table.withLock { table -> HydrationJob in
            let job = HydrationJob(id: table.next, files: work.map { HydrationJob.File(path: $0.path, total: $0.total) })
            table.next += 1
            table.jobs[job.id] = job
            let finished = table.jobs.values.filter(\.finished).map(\.id).sorted()
            for id in finished.dropLast(Self.kept) { table.jobs[id] = nil }
            return job
        }
        Task { await run(job.id, work) }
        return job
    }

    /// The job `id` as it is now.
    func job(_ id: Int) throws(ControlFailure) -> HydrationJob {
        guard let job = table.withLock({ $0.jobs[id] }) else {
            throw ControlFailure(.failed, "there is no hydration job \(id) (the daemon may have restarted)")
        }
        return job
    }

    private func run(_ id: Int, _ work: [DomainFiles.Work]) async {
        for (index, piece) in work.enumerated() {
            do throws(ProviderError) {
                try await piece.run { done in self.update(id, index) { $0.done = min(done, $0.total) } }
                update(id, index) { $0.finished = true }
            } catch {
                update(id, index) {
                    $0.error = error.message
                    $0.finished = true
                }
            }
        }
    }

    private func update(_ id: Int, _ index: Int, _ change: (inout HydrationJob.File) -> Void) {
        table.withLock { table in
            guard var job = table.jobs[id], job.files.indices.contains(index) else { return }
            change(&job.files[index])
            table.jobs[id] = job
        }
    }
}
