// Thumbnails of image placeholders in the freedesktop cache (issue 17). A file manager draws
// an image's icon by reading the image; in a folder of placeholders that would download every
// picture. GLib and KDE look in `$XDG_CACHE_HOME/thumbnails/` first, so after each pass the
// maker puts a thumbnail there for each image placeholder that has none, made from the preview
// the image carries (one ranged GET of its first bytes, a second for the preview when it lies
// further in) or from the whole image when it is small enough (`thumbnail_max_fetch`). Nothing
// is written into the sync folder and no placeholder is hydrated.
//
// The cache is the folder owner's (`ThumbnailCacheOwner`), and everything done in the cache or
// the sync folder, decoding included, runs on one thread of its own acting as that owner
// (`IdentityThread`): never as root in a user's folders, never on Swift's cooperative threads.
//
// What was made is kept in an index (item, URI, mtime, size): an image renamed (its URI
// changes) or changed on the server (its mtime does) loses its old thumbnail and gets a new
// one; a deleted one loses it; an image with no thumbnail to be had is recorded too, so it is
// not fetched again at every pass; one that failed (the server) is tried again later, less
// often each time; a cache that cannot be written stops all fetching until it can.
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
    /// The thread every cache read, write and decode, and every look at the sync folder,
    /// runs on, as the cache's owner.
    let writer: IdentityThread
    let index: ThumbnailIndex
    let options: ThumbnailFetchOptions
    let logger: Logger
    let trigger: AsyncStream<Void>.Continuation
    private let triggers: AsyncStream<Void>
    /// Images whose last try failed, with the version that failed.
    let failures = Mutex([ItemIdentifier: RetryState]())
    /// Set while the cache cannot be written: nothing is fetched until then.
    let blocked = Mutex<RetryState?>(nil)
    /// When a wake-up is already due (`wake(after:)`).
    let nextWake = Mutex<ContinuousClock.Instant?>(nil)

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
        /// It failed now (the server); tried again later.
        case failed(String)
        /// The cache could not be written; nothing is fetched until it can.
        case cacheFailed(String)
    }

    /// Whether the next pass must wake the maker: the first one.
    private let wakeNext = Mutex(true)

    /// Asks for a round of `reconcile` (coalesced) after a pass that changed something and
    /// after the first one: a pass with no step moved, renamed or brought down nothing, so an
    /// idle domain's polls read nothing here. Retries wake it by themselves (`wake(after:)`).
    func passFinished(steps: Int) {
        let due = wakeNext.withLock { due in
            defer { due = false }
            return due
        }
        if steps > 0 || due { trigger.yield() }
    }

    /// Reconciles after each wake until cancelled.
    func run() async {
        await withTaskCancellationHandler {
            for await _ in triggers where !Task.isCancelled { await reconcile() }
        } onCancel: {
            trigger.finish()
        }
    }

    /// Removes thumbnails whose image moved, changed or went, and makes the missing ones.
    func reconcile() async {
        defer { index.save() }
        let placeholders: [RecordedPlaceholder]
        do { placeholders = try provider.recordedPlaceholders() } catch {
            logger.warning("thumbnails: cannot read the placeholders: \(error.message)")
            return
        }
        let paths = Dictionary(placeholders.map { ($0.record.id, $0.path) }, uniquingKeysWith: { first, _ in first })
        failures.withLock { failures in failures = failures.filter { paths[$0.key] != nil } }
        await removeStale(placeholders: paths)
        let now = ContinuousClock.now
        let looked = await targets(placeholders.map { ($0.record.id, $0.path) })
        let wanted = looked.filter { target in
            index.entry(target.id)?.matches(target) != true
                && failures.withLock { $0[target.id].map { $0.stamp != target.stamp || $0.retry <= now } ?? true }
        }
        wakeForRetries()
        guard !wanted.isEmpty, await cacheUsable() else { return }
        let tally = Mutex((made: 0, fetched: Int64(0)))
        await make(wanted) { _, outcome in
            guard case .made(_, let bytes) = outcome else { return }
            tally.withLock { $0 = ($0.made + 1, $0.fetched + bytes) }
        }
        let (made, fetched) = tally.withLock { $0 }
        if made > 0 { logger.info("thumbnails: made for \(made) image placeholder(s), \(fetched) bytes fetched") }
    }

    /// Drops the index's entries whose image is no longer at that URI with that mtime and
    /// size, and the thumbnails made for them: only those still stamped with what the entry
    /// records, so a thumbnail the desktop made of the file since (it was downloaded and
    /// edited, say) stays. `placeholders` are today's placeholders' paths, which saves a
    /// state-DB lookup for each; an item that is no placeholder now is looked up.
    private func removeStale(placeholders: [ItemIdentifier: RemotePath]) async {
        let entries = index.entries()
        let located = entries.map { ($0.0, placeholders[$0.0] ?? (try? provider.path(of: $0.0)).flatMap { $0 }) }
        guard let current = await writer.run({ located.map { id, path in path.flatMap { self.target(id, at: $0) } } }) else { return }
        let stale = zip(entries, current).filter { entry, now in now.map(entry.1.matches) != true }.map(\.0)
        for (id, entry) in stale { index.remove(id, ifStill: entry) }
        let made = stale.map(\.1).filter(\.made)
        guard !made.isEmpty else { return }
        _ = await writer.run { [cache] in
            for entry in made {
                for size in ThumbnailSize.allCases
                where cache.validThumbnail(uri: entry.uri, mtime: entry.mtime, fileSize: entry.size, size: size) {
                    unlink(cache.path(forURI: entry.uri, size: size).path)
                }
            }
        }
    }

    /// The cache's view of the images at `paths` that are regular files of an image type,
    /// looked at as the cache's owner.
    func targets(_ paths: [(ItemIdentifier, RemotePath)]) async -> [Target] {
        let images = paths.filter { $0.1.components.last.flatMap(ImageKind.of(name:)) != nil }
        guard !images.isEmpty else { return [] }
        return await writer.run { images.compactMap { self.target($0.0, at: $0.1) } } ?? []
    }

    /// The cache's view of the image at `path`; nil when it is not an image type or cannot
    /// be looked at. Runs on `writer`: as root it would follow a link the user put in the
    /// path to files they may not see.
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
