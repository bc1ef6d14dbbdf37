// Thumbnails of image placeholders in the freedesktop cache (issue 17). A file manager draws
// an image's icon by reading the image; in a folder of placeholders that would download every
// picture. GLib and KDE look in `$XDG_CACHE_HOME/thumbnails/` first, so after each pass the
// maker puts a thumbnail there for each image placeholder that has none, made from the preview
// the image carries (one ranged GET of its first bytes, a second for the preview when it lies
// further in) or from the whole image when it is small enough (`thumbnail_max_fetch`). Nothing
// is written into the sync folder and no placeholder is hydrated.
//
// What was made is kept in an index (item, URI, mtime), a JSON file beside the state DB: an
// image renamed (its URI changes) or changed on the server (its mtime does) loses its old
// thumbnail and gets a new one; a deleted one loses it; an image with no thumbnail to be had
// is recorded too, so it is not fetched again at every pass.
import Foundation
import Glibc
import Logging
import Replica
import SyncEngine
import Synchronization
import Thumbnails

/// Makes the thumbnails of one domain's image placeholders.
final class ThumbnailMaker: Sendable {
    let provider: SyncProvider
    let folder: LocalFolder
    let cache: ThumbnailCache
    let index: ThumbnailIndex
    let options: ThumbnailFetchOptions
    let logger: Logger
    private let trigger: AsyncStream<Void>.Continuation
    private let triggers: AsyncStream<Void>

    /// The sizes made ahead: what file managers ask for at their usual zoom levels.
    static let sizes: [ThumbnailSize] = [.normal, .large]

    init(provider: SyncProvider, folder: LocalFolder, cache: ThumbnailCache, indexPath: String, maxWholeFetch: Int64,
         logger: Logger) {
        self.provider = provider
        self.folder = folder
        self.cache = cache
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

    /// Whether the next pass must wake the maker: the first one, and any after a failure.
    private let wakeNext = Mutex(true)

    /// Asks for a round of `reconcile` (coalesced) after a pass that changed something, after
    /// the first one, and after one that follows a failed thumbnail: a pass with no step
    /// moved, renamed or brought down nothing, so an idle domain's polls read nothing here.
    func passFinished(steps: Int) {
        let due = wakeNext.withLock { due in
            defer { due = false }
            return due
        }
        if steps > 0 || due { trigger.yield() }
    }

    /// Reconciles after each `wake` until cancelled.
    func run() async {
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
        removeStale()
        let wanted = placeholders.compactMap { target($0.record.id, at: $0.path) }.filter { index.entry($0.id)?.matches($0) != true }
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

    /// Drops the index's entries whose image is no longer at that URI with that mtime, and
    /// their thumbnails (every size).
    private func removeStale() {
        for (id, entry) in index.entries() {
            let current = (try? provider.path(of: id)).flatMap { $0 }.flatMap { target(id, at: $0) }
            guard current.map(entry.matches) != true else { continue }
            cache.remove(uri: entry.uri)
            index.remove(id)
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
            let outcome = self.store(result, for: target)
            switch outcome {
            case .made: self.index.set(target.id, ThumbnailIndex.Entry(target, made: true))
            case .none(let why):
                self.logger.debug("thumbnails: none for \(target.path): \(why)")
                self.index.set(target.id, ThumbnailIndex.Entry(target, made: false))
            case .failed(let why):
                self.wakeNext.withLock { $0 = true }
                self.logger.info("thumbnails: \(target.path): \(why); tried again after the next pass")
            }
            await done(target, outcome)
        }
    }

    /// Renders and stores what was fetched for `target`, unless the file changed meanwhile.
    private func store(_ result: Result<ThumbnailSource?, ProviderError>, for wanted: Target) -> Outcome {
        let target = wanted
        let source: ThumbnailSource
        switch result {
        case .failure(let error): return .failed(error.message)
        case .success(nil): return .none("no preview in its first bytes, and larger than thumbnail_max_fetch")
        case .success(let fetched?): source = fetched
        }
        // Stamped with the file's mtime and size when the fetch began: a file that changed
        // since would get a thumbnail GLib takes for the new bytes.
        guard self.target(wanted.id, at: wanted.path) == wanted else { return .failed("it changed while its thumbnail was made") }
        do throws(ThumbnailError) {
            for size in Self.sizes {
                let png = try ThumbnailRenderer.cachePNG(from: source.bytes, size: size, uri: target.uri, mtime: target.mtime,
                                                         fileSize: target.size, mimeType: nil)
                try cache.store(png, forURI: target.uri, size: size)
            }
        } catch {
            switch error {
            case .cache, .outOfMemory: return .failed(error.description)
            default: return .none(error.description)
            }
        }
        return .made(origin: source.origin, fetched: source.fetched)
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

/// What the maker made, by item: kept in a JSON file so a restart neither makes them again
/// nor forgets which to remove.
final class ThumbnailIndex: Sendable {
    struct Entry: Codable, Sendable, Equatable {
        var uri: String
        var mtime: Int64
        var size: Int64
        /// False: none could be made for this version (not tried again).
        var made: Bool

        init(_ target: ThumbnailMaker.Target, made: Bool) {
            (uri, mtime, size, self.made) = (target.uri, target.mtime, target.size, made)
        }

        func matches(_ target: ThumbnailMaker.Target) -> Bool {
            uri == target.uri && mtime == target.mtime && size == target.size
        }
    }

    let path: String
    let logger: Logger
    private let table: Mutex<(entries: [String: Entry], changed: Bool)>

    init(path: String, logger: Logger) {
        self.path = path
        self.logger = logger
        let data = FileManager.default.contents(atPath: path)
        let entries = data.flatMap { try? JSONDecoder().decode([String: Entry].self, from: $0) } ?? [:]
        if data != nil, entries.isEmpty, data?.isEmpty == false {
            logger.warning("thumbnails: \(path) cannot be read; its thumbnails are made again")
        }
        table = Mutex((entries, false))
    }

    func entries() -> [(ItemIdentifier, Entry)] {
        table.withLock { $0.entries.map { (ItemIdentifier($0.key), $0.value) } }
    }

    func entry(_ id: ItemIdentifier) -> Entry? { table.withLock { $0.entries[id.rawValue] } }

    func set(_ id: ItemIdentifier, _ entry: Entry) {
        table.withLock { table in
            guard table.entries[id.rawValue] != entry else { return }
            table.entries[id.rawValue] = entry
            table.changed = true
        }
    }

    func remove(_ id: ItemIdentifier) {
        table.withLock { table in
            guard table.entries.removeValue(forKey: id.rawValue) != nil else { return }
            table.changed = true
        }
    }

    /// Writes the index when it changed: a temporary file, fsynced, renamed into place.
    func save() {
        guard let entries = table.withLock({ table -> [String: Entry]? in
            defer { table.changed = false }
            return table.changed ? table.entries : nil
        }) else { return }
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            let data = try encoder.encode(entries)
            let temporary = path + ".tmp"
            guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]) else {
                throw CocoaError(.fileWriteUnknown)
            }
            let fd = open(temporary, O_RDONLY | O_CLOEXEC)
            if fd >= 0 { fsync(fd); close(fd) }
            guard rename(temporary, path) == 0 else { throw CocoaError(.fileWriteUnknown) }
        } catch {
            table.withLock { $0.changed = true }
            logger.warning("thumbnails: cannot write \(path): \(error); tried again after the next pass")
        }
    }
}
