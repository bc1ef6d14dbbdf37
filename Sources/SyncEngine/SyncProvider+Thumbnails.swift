// `fetchThumbnails` (issue 17): the bytes a thumbnail of a file that is not downloaded is
// made from, fetched by range so the file stays as it is. Cheapest first: a preview the
// image carries (an EXIF thumbnail, a raw file's JPEG preview), found in its first bytes by
// the caller's `PreviewLocator` and fetched with at most one more ranged GET; else the whole
// image when it is small enough; else none. Every GET names the version the listing gave
// (strict versioning). The engine fetches; decoding and scaling are the caller's.
import Foundation

/// Where an image keeps a preview, as told from its first bytes.
public enum EmbeddedPreview: Equatable, Sendable {
    /// The preview is these bytes of the file (an encoded JPEG).
    case at(ByteRange)
    /// The image's header is valid and says more of the file must be read to tell: its
    /// first `upTo` bytes.
    case needMore(upTo: Int64)
    /// The file carries no preview (or a broken one).
    case none
}

/// Finds an embedded preview in a file's first bytes (the Thumbnails module's EXIF reader).
public protocol PreviewLocator: Sendable {
    func preview(in prefix: [UInt8], fileSize: Int64) -> EmbeddedPreview
}

/// A store whose server makes previews of its files (Nextcloud): cheaper than fetching a
/// whole image, so asked after the embedded preview and before the whole file.
public protocol ServerPreviews: Sendable {
    /// A PNG or JPEG preview of the file at `path` fitting `longSide` pixels, made by the
    /// server from `version`; nil when the server has none for it. Throws
    /// `versionNoLongerAvailable` when the file is no longer `version`.
    func serverPreview(of path: RemotePath, version: ETag, longSide: Int) async throws(ProviderError) -> [UInt8]?
}

/// How `fetchThumbnails` fetches.
public struct ThumbnailFetchOptions: Sendable {
    /// The first bytes read to look for an embedded preview: 64 KiB holds a JPEG's whole
    /// EXIF segment (APP1 is at most 64 KiB) and a raw file's directories; a preview that
    /// lies further in is one more ranged GET.
    public var prefixLength: Int64
    /// An image this size or smaller with no embedded preview is fetched whole.
    public var maxWholeFetch: Int64
    /// An embedded preview larger than this is not fetched (a hostile header's length).
    public var maxPreviewLength: Int64
    /// How many items are fetched at once.
    public var concurrency: Int
    /// The long side, in pixels, asked of a server that makes previews (`ServerPreviews`).
    public var serverPreviewSide = 256

    public init(prefixLength: Int64 = 64 << 10, maxWholeFetch: Int64 = 8 << 20, maxPreviewLength: Int64 = 4 << 20,
                concurrency: Int = 4) {
        self.prefixLength = max(4096, prefixLength)
        self.maxWholeFetch = max(0, maxWholeFetch)
        self.maxPreviewLength = max(0, maxPreviewLength)
        self.concurrency = max(1, concurrency)
    }
}

/// The encoded image a thumbnail is made from.
public struct ThumbnailSource: Sendable, Equatable {
    public enum Origin: String, Sendable {
        /// A preview the image carries; turned as the image's EXIF orientation says.
        case embedded
        /// The whole image; turned as its EXIF orientation says.
        case whole
        /// A preview the server made (`ServerPreviews`), already upright.
        case server
    }
    /// The encoded bytes: the embedded preview, or the whole file.
    public var bytes: [UInt8]
    public var origin: Origin
    /// The version they belong to.
    public var version: ETag
    /// How many bytes were fetched from the server for it, the prefix included.
    public var fetched: Int64
    /// The file's first bytes as fetched (at most the prefix length): its header, which
    /// says how an embedded preview is to be turned (EXIF orientation).
    public var header: [UInt8]

    public init(bytes: [UInt8], origin: Origin, version: ETag, fetched: Int64, header: [UInt8] = []) {
        self.bytes = bytes
        self.origin = origin
        self.version = version
        self.fetched = fetched
        self.header = header
    }
}

extension SyncProvider {
    /// Fetches what a thumbnail of each item is made from, `options.concurrency` items at a
    /// time, and hands each to `perThumbnail` as it comes: the source, nil when the item has
    /// none (no embedded preview and too large to fetch whole, empty, not a file), or the
    /// error. Returns when every item was answered, or early when the task is cancelled
    /// (the items not started are not answered).
    public func fetchThumbnails(for ids: [ItemIdentifier], options: ThumbnailFetchOptions = ThumbnailFetchOptions(),
                                locator: any PreviewLocator,
                                perThumbnail: @escaping @Sendable (ItemIdentifier, Result<ThumbnailSource?, ProviderError>) async -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            var next = ids.makeIterator()
            func startNext() -> Bool {
                guard !Task.isCancelled, let id = next.next() else { return false }
                group.addTask {
                    do throws(ProviderError) {
                        await perThumbnail(id, .success(try await self.thumbnailSource(of: id, options: options, locator: locator)))
                    } catch {
                        await perThumbnail(id, .failure(error))
                    }
                }
                return true
            }
            for _ in 0..<options.concurrency where !startNext() { break }
            while await group.next() != nil { _ = startNext() }
        }
    }

    /// The source of one item's thumbnail (see `fetchThumbnails`).
    func thumbnailSource(of id: ItemIdentifier, options: ThumbnailFetchOptions,
                         locator: any PreviewLocator) async throws(ProviderError) -> ThumbnailSource? {
        guard let record = try state.item(id) else { throw ProviderError(.noSuchItem, "item \(id) is not known to the engine") }
        guard record.kind == .file, record.size > 0, let version = record.remoteETag else { return nil }
        let path = try requirePath(of: id), size = record.size
        var fetched: Int64 = 0
        func get(_ range: ByteRange) async throws(ProviderError) -> [UInt8] {
            let bytes = try await fetchBytes(path, range: range, version: version)
            fetched += Int64(bytes.count)
            return bytes
        }
        var prefix = try await get(ByteRange(offset: 0, length: min(size, options.prefixLength)))
        var found = locator.preview(in: prefix, fileSize: size)
        if case .needMore(let end) = found, end > Int64(prefix.count), end <= min(size, Int64(prefix.count) + options.maxPreviewLength) {
            prefix += try await get(ByteRange(offset: Int64(prefix.count), length: end - Int64(prefix.count)))
            found = locator.preview(in: prefix, fileSize: size)
        }
        if case .at(let range) = found, range.length > 0, range.length <= options.maxPreviewLength, range.end <= size {
            let bytes = range.end <= Int64(prefix.count) ? Array(prefix[Int(range.offset)..<Int(range.end)]) : try await get(range)
            return ThumbnailSource(bytes: bytes, origin: .embedded, version: version, fetched: fetched,
                                   header: Array(prefix.prefix(Int(options.prefixLength))))
        }
        let header = Array(prefix.prefix(Int(options.prefixLength)))
        if let server = store as? any ServerPreviews,
           let preview = try await server.serverPreview(of: path, version: version, longSide: options.serverPreviewSide) {
            guard preview.count <= options.maxPreviewLength else { return nil }
            fetched += Int64(preview.count)
            return ThumbnailSource(bytes: preview, origin: .server, version: version, fetched: fetched, header: header)
        }
        guard size <= options.maxWholeFetch else { return nil }
        if Int64(prefix.count) < size {
            prefix += try await get(ByteRange(offset: Int64(prefix.count), length: size - Int64(prefix.count)))
        }
        return ThumbnailSource(bytes: prefix, origin: .whole, version: version, fetched: fetched,
                               header: Array(prefix.prefix(Int(options.prefixLength))))
    }

    /// The bytes `range` of the file at `path`, which must still be `version`, read into
    /// memory through a scratch file; `versionNoLongerAvailable` when the server moved on.
    private func fetchBytes(_ path: RemotePath, range: ByteRange, version: ETag) async throws(ProviderError) -> [UInt8] {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("tidesync-thumbnail-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        do {
            _ = try await store.download(path, range: range, version: version, to: scratch, progress: nil)
        } catch where error.code == .versionMismatch {
            throw ProviderError(.versionNoLongerAvailable, "\(path) changed on the server; version \(version) is gone",
                                underlying: error.message)
        }
        guard let data = FileManager.default.contents(atPath: scratch.path) else {
            throw ProviderError(.cannotSynchronize, "cannot read the fetched bytes of \(path)")
        }
        let expected = Int(range.length)
        guard data.count == expected else {
            throw ProviderError(.cannotSynchronize, "the server sent \(data.count) bytes of \(path) for \(range), not \(expected)")
        }
        return [UInt8](data)
    }
}
