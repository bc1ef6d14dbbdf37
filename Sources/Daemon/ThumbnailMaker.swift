// Thumbnails of image placeholders in the freedesktop cache (issue 17). A file manager draws
// an image's icon by reading the image; in a folder of placeholders that would download every
// picture. GLib and KDE look in `$XDG_CACHE_HOME/thumbnails/` first, so after each pass the
// maker puts a thumbnail there for each image placeholder that has none, made from the preview
// the image carries (one ranged GET of its first bytes, a second for the preview when it lies
// further in) or from the whole image when it is small enough (`thumbnail_max_fetch`). Nothing
// is written into the sync folder and no placeholder is hydrated.
//
// The cache is the folder owner's (`ThumbnailCacheOwner`), and everything done in it, decoding
// included, runs on one thread of its own acting as that owner (`IdentityThread`): never as
// root in a user's folders, never on Swift's cooperative threads.
//
// What was made is kept in an index (item, URI, mtime, size): an image renamed (its URI
// changes) or changed on the server (its mtime does) loses its old thumbnail and gets a new
// one; a deleted one loses it; an image with no thumbnail to be had is recorded too, so it is
// not fetched again at every pass; one that failed (the server, the cache) is tried again
// later, less often each time.
import Foundation
import Glibc
import Logging
import Replica
import SyncEngine
import Synchronization
import SystemCalls
import Thumbnails

/// Makes the thumbnails of one domain's image placeholders.
final class ThumbnailMaker: Sendable {
    let provider: SyncProvider
    let folder: LocalFolder
    /// Whose cache the thumbnails go to.
    let owner: ThumbnailCacheOwner
    let cache: ThumbnailCache
    /// The thread every cache read, write and decode runs on, as the cache's owner.
    let writer: IdentityThread
    let index: ThumbnailIndex
    let options: ThumbnailFetchOptions
    let logger: Logger
    private let trigger: AsyncStream<Void>.Continuation
    private let triggers: AsyncStream<Void>
    /// Images whose last try failed: how often in a row, and not before when again.
    private let failures = Mutex([ItemIdentifier: (count: Int, retry: ContinuousClock.Instant)]())

    /// The sizes made ahead: what file managers ask for at their usual zoom levels.
    static let sizes: [ThumbnailSize] = [.normal, .large]

    init(provider: SyncProvider, folder: LocalFolder, owner: ThumbnailCacheOwner, writer: IdentityThread, indexPath: String,
         maxWholeFetch: Int64, logger: Logger) {
        self.provider = provider
        self.folder = folder
        self.owner = owner
        self.cache = ThumbnailCache(root: URL(fileURLWithPath: owner.root))
        self.writer = writer
        self.index = ThumbnailIndex(path: indexPath, logger: logger)
        self.options = ThumbnailFetchOptions(maxWholeFetch: maxWholeFetch, concurrency: 2)
        self.logger = logger
        (triggers, trigger) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// An image file as the cache names it: its URI, and the mtime and size it is stamped with.
    struct Target: Sendable, Equatable {
        var id: ItemIdentifier
        var path: RemotePath
        var uri: String
        var mtime: Int64
        var size: Int64
    }

    /// What became of one image.
    enum Outcome: Sendable, Equatable {
        /// Thumbnails were written, made from `origin`, after fetching `fetched` bytes.
        case made(origin: ThumbnailSource.Origin, fetched: Int64)
        /// None can be had (no preview and too large, not an image the libraries read).
        case none(String)
        /// It failed now (the server, the cache folder); tried again later.
        case failed(String)
    }

    /// Whether the next pass must wake the maker: the first one, and any while images wait
    /// to be tried again.
    private let wakeNext = Mutex(true)

    /// Asks for a round of `reconcile` (coalesced) after a pass that changed something, after
    /// the first one, and after each while a failed image waits: a pass with no step moved,
    /// renamed or brought down nothing, so an idle domain's polls read nothing here.
    func passFinished(steps: Int) {
        let due = wakeNext.withLock { due in
            defer { due = false }
            return due
        }
        if steps > 0 || due { trigger.yield() }
    }

    /// Reconciles after each wake until cancelled; refuses a cache that is not its owner's.
    func run() async {
        if let foreign = await writer.run({ [owner] in owner.foreignCache() }) ?? nil {
            logger.warning("thumbnails are off: \(foreign)")
            return
        }
        await withTaskCancellationHandler {
            for await _ in triggers where !Task.isCancelled { await reconcile() }
        } onCancel: {
            trigger.finish()
        }
    }

    /// Removes thumbnails whose image moved, changed or went, and makes the missing ones.
    func reconcile() async {
        let placeholders: [RecordedPlaceholder]
        do { placeholders = try provider.recordedPlaceholders() } catch {
            logger.warning("thumbnails: cannot read the placeholders: \(error.message)")
            return
        }
        await removeStale(placeholders: Dictionary(placeholders.map { ($0.record.id, $0.path) }, uniquingKeysWith: { first, _ in first }))
        let now = ContinuousClock.now
        let waiting = failures.withLock { $0.filter { $0.value.retry > now }.keys }
        let wanted = placeholders.compactMap { target($0.record.id, at: $0.path) }
            .filter { index.entry($0.id)?.matches($0) != true && !waiting.contains($0.id) }
        if !waiting.isEmpty { wakeNext.withLock { $0 = true } }
        guard !wanted.isEmpty else { return }
        let tally = Mutex((made: 0, fetched: Int64(0)))
        await make(wanted) { _, outcome in
            guard case .made(_, let bytes) = outcome else { return }
            tally.withLock { $0 = ($0.made + 1, $0.fetched + bytes) }
        }
        index.save()
        let (made, fetched) = tally.withLock { $0 }
        if made > 0 { logger.info("thumbnails: made for \(made) image placeholder(s), \(fetched) bytes fetched") }
    }

    /// Drops the index's entries whose image is no longer at that URI with that mtime and
    /// size, and the thumbnails made for them: only those still stamped with what the entry
    /// records, so a thumbnail the desktop made of the file since (it was downloaded and
    /// edited, say) stays.
    /// `placeholders` are the paths of today's placeholders, which saves a state-DB lookup for
    /// each of them; an item that is no placeholder now (downloaded, deleted) is looked up.
    private func removeStale(placeholders: [ItemIdentifier: RemotePath]) async {
        var stale: [ThumbnailIndex.Entry] = []
        for (id, entry) in index.entries() {
            let path = placeholders[id] ?? (try? provider.path(of: id)).flatMap { $0 }
            let current = path.flatMap { target(id, at: $0) }
            guard current.map(entry.matches) != true else { continue }
            index.remove(id)
            if entry.made { stale.append(entry) }
        }
        guard !stale.isEmpty else { return }
        _ = await writer.run { [cache, stale] in
            for entry in stale {
                for size in ThumbnailSize.allCases
                where cache.validThumbnail(uri: entry.uri, mtime: entry.mtime, fileSize: entry.size, size: size) {
                    unlink(cache.path(forURI: entry.uri, size: size).path)
                }
            }
        }
    }

    /// The cache's view of the image at `path`; nil when it is not an image type or cannot
    /// be looked at.
    func target(_ id: ItemIdentifier, at path: RemotePath) -> Target? {
        guard let name = path.components.last, ImageKind.of(name: name) != nil else { return nil }
        let absolute = folder.absolute(path)
        var info = stat()
        guard lstat(absolute, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return Target(id: id, path: path, uri: ThumbnailCache.uri(forPath: absolute), mtime: Int64(info.st_mtim.tv_sec),
                      size: Int64(info.st_size))
    }

    /// Makes the thumbnails of `targets` (fetched `options.concurrency` at a time), records
    /// each in the index, and tells `done` of each as it ends.
    func make(_ targets: [Target], done: @escaping @Sendable (Target, Outcome) async -> Void) async {
        let byID = Dictionary(targets.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        await provider.fetchThumbnails(for: targets.map(\.id), options: options, locator: EXIFLocator()) { id, result in
            guard let target = byID[id] else { return }
            let outcome = await self.store(result, for: target)
            self.record(outcome, for: target)
            await done(target, outcome)
        }
    }

    /// Notes `outcome` in the index (made, or none to be had) or as a failure to try again:
    /// after 1 minute, then 2, 4... at most 6 hours.
    private func record(_ outcome: Outcome, for target: Target) {
        switch outcome {
        case .made:
            index.set(target.id, ThumbnailIndex.Entry(target, made: true))
            failures.withLock { _ = $0.removeValue(forKey: target.id) }
        case .none(let why):
            logger.debug("thumbnails: none for \(target.path): \(why)")
            index.set(target.id, ThumbnailIndex.Entry(target, made: false))
            failures.withLock { _ = $0.removeValue(forKey: target.id) }
        case .failed(let why):
            let count = failures.withLock { failures in
                let count = (failures[target.id]?.count ?? 0) + 1
                let delay = Duration.seconds(min(60 << min(count - 1, 9), 6 * 3600))
                failures[target.id] = (count, ContinuousClock.now + delay)
                return count
            }
            wakeNext.withLock { $0 = true }
            logger.info("thumbnails: \(target.path): \(why); tried again later (failed \(count) time(s) in a row)")
        }
    }

    /// Renders and stores what was fetched for `target` on the writer's thread.
    private func store(_ result: Result<ThumbnailSource?, ProviderError>, for target: Target) async -> Outcome {
        let source: ThumbnailSource
        switch result {
        case .failure(let error): return .failed(error.message)
        case .success(nil): return .none("no preview in its first bytes, and larger than thumbnail_max_fetch")
        case .success(let fetched?): source = fetched
        }
        // The bytes must be of the version the placeholder stands for: a newer one on the
        // server waits for the pass that brings its placeholder.
        guard (try? provider.itemRecord(target.id))??.remoteETag == source.version else {
            return .failed("it changed on the server while its thumbnail was made")
        }
        // Stamped with the file's mtime and size when the fetch began: a file that changed
        // since would get a thumbnail GLib takes for the new bytes.
        guard self.target(target.id, at: target.path) == target else { return .failed("it changed while its thumbnail was made") }
        return await writer.run { self.render(source, for: target) } ?? .failed("the daemon is stopping")
    }
}

/// The engine's preview port over the Thumbnails module's EXIF reader.
struct EXIFLocator: PreviewLocator {
    func preview(in prefix: [UInt8], fileSize: Int64) -> EmbeddedPreview {
        switch EmbeddedThumbnail.locate(in: prefix, fileSize: Int(clamping: fileSize)) {
        case .found(let offset, let length): return .at(ByteRange(offset: Int64(offset), length: Int64(length)))
        case .needMore(let end): return .needMore(upTo: Int64(end))
        case .none: return .none
        }
    }
}
