// The file commands on one running domain (issue 15 item 7): `file-status`, `pin`,
// `unpin`, `evict`, `hydrate`, each on a path below the domain's folder. Every answer is a
// `FileReport`; what cannot be done is a report with the reason, never a silent no-op. A
// hydration is returned as work for a job (`HydrationJobs`), so the control thread never
// waits on a download.
import Control
import Foundation
import Glibc
import Logging
import Replica
import StateDatabase
import SyncEngine
import Synchronization
import Thumbnails
import TidesyncConfig

/// One running domain's files, as the control socket reaches them.
final class DomainFiles: Sendable {
    let domain: DomainConfiguration
    let folder: LocalFolder
    let provider: SyncProvider
    let onDemand: FilesOnDemand
    let monitor: DomainMonitor
    let databasePath: String
    /// Makes thumbnails of image placeholders; nil when files on demand or thumbnails are off.
    let thumbnails: ThumbnailMaker?

    init(domain: DomainConfiguration, folder: LocalFolder, provider: SyncProvider, onDemand: FilesOnDemand,
         monitor: DomainMonitor, databasePath: String, thumbnails: ThumbnailMaker? = nil) {
        self.domain = domain
        self.folder = folder
        self.provider = provider
        self.onDemand = onDemand
        self.monitor = monitor
        self.databasePath = databasePath
        self.thumbnails = thumbnails
    }

    /// A piece of hydration a job runs: fetches what `path` lacks of its range, telling
    /// `progress` how many bytes of it are on disk.
    struct Work: Sendable {
        var path: String
        var total: Int64
        var run: @Sendable (_ progress: @escaping @Sendable (Int64) -> Void) async throws(ProviderError) -> Void
    }

    /// The fanotify port, or why the file commands cannot run in this domain.
    func port() throws(ProviderError) -> FanotifyPlaceholders {
        if let fanotify = onDemand.fanotify { return fanotify }
        let why = onDemand.sentence ?? "files on demand: off (mode = \"off\")"
        throw ProviderError(.cannotSynchronize, "domain \"\(domain.name)\": \(why); set mode = \"auto\" or \"all\" under "
                            + "[domain.placeholders] where fanotify pre-content events are available")
    }

    /// The report of `path` (`absolute` as named) with what it holds, its pin, and whether
    /// it is pending or in a conflict.
    func status(_ path: RemotePath, absolute: String) throws(ProviderError) -> FileReport {
        let port = try port()
        guard let entry = folder.entry(at: path) else { throw ProviderError(.noSuchItem, "\(absolute) does not exist") }
        var report = FileReport(path: absolute, domain: domain.name)
        let record = try provider.itemID(at: path).flatMap { id throws(ProviderError) in try provider.itemRecord(id) }
        report.kind = entry.kind.rawValue
        report.pinned = try provider.isPinned(path)
        report.pending = record == nil || (entry.kind == .file && record?.local != entry.stat)
            || monitor.snapshot().pending.contains { $0.step.path == path }
        report.conflict = conflicted(path)
        if entry.kind == .file {
            let held = port.heldBytes(path, record: record)
            (report.state, report.size, report.present) = (held.state.rawValue, held.size, held.present)
        }
        return report
    }

    /// True when `path` is the original or the copy of a recorded conflict.
    private func conflicted(_ path: RemotePath) -> Bool {
        guard let database = try? StateDatabase(readOnlyPath: databasePath),
              let conflicts = try? database.conflicts() else { return false }
        return conflicts.contains { $0.original == path || $0.copy == path }
    }

    /// Pins `path` (a folder: everything below, and what comes later); its placeholders are
    /// hydrated whole by the work returned.
    func pin(_ path: RemotePath, absolute: String) throws(ProviderError) -> (FileReport, [Work]) {
        let port = try port()
        try provider.setPin(.pinned, at: path)
        var report = FileReport(path: absolute, domain: domain.name)
        let work = try placeholders(atOrBelow: path, port: port)
        report.done = work.isEmpty ? "pinned" : "pinned; downloading \(work.count) placeholder(s)"
        return (report, work)
    }

    /// Unpins `path`: it may be evicted again.
    func unpin(_ path: RemotePath, absolute: String) throws(ProviderError) -> FileReport {
        _ = try port()
        try provider.setPin(.unpinned, at: path)
        var report = FileReport(path: absolute, domain: domain.name)
        report.done = "unpinned (`tidesync evict` frees its space)"
        return report
    }

    /// Evicts the file at `path`, or every file below the folder at `path`: one report each.
    func evict(_ path: RemotePath, absolute: String) throws(ProviderError) -> [FileReport] {
        let port = try port()
        guard let entry = folder.entry(at: path) else { throw ProviderError(.noSuchItem, "\(absolute) does not exist") }
        let paths = entry.kind == .folder ? try provider.files(atOrBelow: path).map(\.path) : [path]
        let syncing = Set(monitor.snapshot().pending.map(\.step.path))
        return paths.map { file in
            var report = FileReport(path: folder.absolute(file), domain: domain.name)
            do throws(ProviderError) {
                // A step of the running pass may be reading it (a comparison, an upload).
                guard !syncing.contains(file) else {
                    throw ProviderError(.locked, "\(folder.absolute(file)) is being synced; evict it once that is done")
                }
                _ = try port.evictNow(file)
                report.done = "evicted"
            } catch {
                report.error = error.message
            }
            return report
        }
    }

    /// The work of hydrating `range` (offset, length; nil: whole) of the file at `path`, or
    /// of every placeholder below the folder at `path`.
    func hydrate(_ path: RemotePath, absolute: String, range: (offset: Int64?, length: Int64?)) throws(ProviderError) -> (FileReport, [Work]) {
        let port = try port()
        guard let entry = folder.entry(at: path) else { throw ProviderError(.noSuchItem, "\(absolute) does not exist") }
        var report = FileReport(path: absolute, domain: domain.name)
        guard entry.kind == .file else {
            guard range.offset == nil, range.length == nil else {
                throw ProviderError(.cannotSynchronize, "\(absolute) is a folder; --range needs a file")
            }
            let work = try placeholders(atOrBelow: path, port: port)
            report.done = "downloading \(work.count) placeholder(s)"
            return (report, work)
        }
        let size = entry.stat.size
        let offset = range.offset ?? 0
        guard offset < size || (offset == 0 && size == 0) else {
            throw ProviderError(.cannotSynchronize, "the range starts at byte \(offset), past the end of \(absolute) (\(size) bytes)")
        }
        let wanted = ByteRange(offset: offset, length: min(range.length ?? size, size - offset))
        report.done = "downloading \(wanted)"
        return (report, [work(path, range: wanted, port: port)])
    }

    /// The work of making the thumbnails of the image placeholder at `path`, or of every one
    /// below the folder at `path` (made again even when the cache has them). A file that is
    /// downloaded is left to the desktop's own thumbnailer.
    func thumbnails(_ path: RemotePath, absolute: String) throws(ProviderError) -> (FileReport, [Work]) {
        let port = try port()
        guard let maker = thumbnails else {
            throw ProviderError(.cannotSynchronize, "domain \"\(domain.name)\" makes no thumbnails (thumbnails = false under [domain.placeholders], or the log says why they are off)")
        }
        guard let entry = folder.entry(at: path) else { throw ProviderError(.noSuchItem, "\(absolute) does not exist") }
        var report = FileReport(path: absolute, domain: domain.name)
        let files = entry.kind == .folder ? try provider.files(atOrBelow: path) : try provider.itemID(at: path).flatMap { id throws(ProviderError) in
            try provider.itemRecord(id).map { [(path: path, record: $0)] }
        } ?? []
        let isImage = { (path: RemotePath) in path.components.last.flatMap(ImageKind.of(name:)) != nil }
        let images = files.filter { isImage($0.path) && port.heldBytes($0.path, record: $0.record).state != .materialized }
        if entry.kind != .folder, images.isEmpty {
            guard let file = files.first, isImage(file.path) else {
                throw ProviderError(.cannotSynchronize, "\(absolute) is not an image tidesync makes thumbnails of (JPEG, PNG, TIFF and raw files based on it)")
            }
            report.done = "downloaded: left to the desktop's own thumbnailer"
            return (report, [])
        }
        report.done = "making thumbnails of \(images.count) image placeholder(s)"
        let work = images.map { file in
            Work(path: folder.absolute(file.path), total: 1) { progress async throws(ProviderError) in
                try await Self.makeThumbnail(of: file.record.id, at: file.path, maker: maker)
                progress(1)
            }
        }
        return (report, work)
    }

    /// Makes the thumbnails of one image placeholder now (`tidesync thumbnails`).
    private static func makeThumbnail(of id: ItemIdentifier, at path: RemotePath, maker: ThumbnailMaker) async throws(ProviderError) {
        guard let target = await maker.targets([(id, path)]).first else {
            throw ProviderError(.noSuchItem, "it is not a regular file, or changed while it was looked at")
        }
        guard await maker.cacheUsable(now: true) else {
            throw ProviderError(.cannotSynchronize, "no thumbnail now: \(maker.cache.root.path) cannot be written (the log says why)")
        }
        let outcome = Mutex<ThumbnailMaker.Outcome?>(nil)
        await maker.make([target]) { _, ended in outcome.withLock { $0 = ended } }
        maker.index.save()
        switch outcome.withLock({ $0 }) {
        case .made?: return
        case .none(let why)?: throw ProviderError(.cannotSynchronize, "no thumbnail: \(why)")
        case .failed(let why)?, .cacheFailed(let why)?: throw ProviderError(.cannotSynchronize, "no thumbnail now: \(why)")
        case nil: throw ProviderError(.cancelled, "the thumbnail was not made (the daemon is stopping)")
        }
    }

    /// Downloads the pinned files that are still placeholders: a pin whose download failed
    /// or was cut short by a stop. Runs at the start, beside the passes, until cancelled.
    func hydratePinned(logger: Logger) async {
        guard let port = onDemand.fanotify, let recorded = try? provider.recordedPlaceholders() else { return }
        for placeholder in recorded where !Task.isCancelled && (try? provider.isPinned(placeholder.path)) == true {
            let range = ByteRange(offset: 0, length: placeholder.record.size)
            do throws(ProviderError) {
                _ = try await port.fill(placeholder.path, range: range, chunk: 8 << 20) { _ in }
                logger.info("\(folder.absolute(placeholder.path)) is pinned: downloaded whole")
            } catch {
                logger.warning("\(folder.absolute(placeholder.path)) is pinned but cannot be downloaded now: \(error.message)")
            }
        }
    }

    /// The work of hydrating, whole, every file at or below `path` that is not whole.
    private func placeholders(atOrBelow path: RemotePath, port: FanotifyPlaceholders) throws(ProviderError) -> [Work] {
        try provider.files(atOrBelow: path).compactMap { file in
            let held = port.heldBytes(file.path, record: file.record)
            return held.state == .materialized ? nil : work(file.path, range: ByteRange(offset: 0, length: held.size), port: port)
        }
    }

    private func work(_ path: RemotePath, range: ByteRange, port: FanotifyPlaceholders) -> Work {
        let chunk = max(port.hydrator.alignment, 8 << 20) / port.hydrator.alignment * port.hydrator.alignment
        return Work(path: folder.absolute(path), total: range.length) { progress async throws(ProviderError) in
            _ = try await port.fill(path, range: range, chunk: chunk, progress: progress)
        }
    }
}
