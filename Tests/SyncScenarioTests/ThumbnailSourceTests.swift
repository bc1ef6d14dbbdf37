import Foundation
import LocalStore
import StateDatabase
import SyncEngine
import Synchronization
import Testing
import TestSupport

/// `fetchThumbnails` takes the cheapest source: the preview the file carries, then the
/// server's preview, then the whole image when small enough, else none; every version
/// checked. A local-directory store (real files) wrapped to offer server previews.
@Suite("thumbnail sources, cheapest first")
struct ThumbnailSourceTests {
    /// Offers a server preview of the files named in `previews`.
    final class PreviewingStore: ForwardingStore, ServerPreviews, @unchecked Sendable {
        let previews: [String: [UInt8]]
        let asked = Mutex<[String]>([])

        init(_ inner: any RemoteStore, previews: [String: [UInt8]]) {
            self.previews = previews
            super.init(inner)
        }

        func serverPreview(of path: RemotePath, version: ETag, longSide: Int) async throws(ProviderError) -> [UInt8]? {
            asked.withLock { $0.append(path.description) }
            return previews[path.description]
        }
    }

    /// Finds a preview at bytes 4..<8 of a file that starts with "EXIF".
    struct Locator: PreviewLocator {
        func preview(in prefix: [UInt8], fileSize: Int64) -> EmbeddedPreview {
            prefix.starts(with: Array("EXIF".utf8)) ? .at(ByteRange(offset: 4, length: 4)) : .none
        }
    }

    @Test("embedded, then the server's preview, then the whole image within the limit, else none")
    func order() async throws {
        let scratch = temporaryPath("tidesync-thumbsource-")
        defer { removeTree(scratch) }
        let files = ["carries.jpg": "EXIFthumand more bytes", "server.jpg": String(repeating: "s", count: 5000),
                     "small.jpg": String(repeating: "w", count: 500), "large.jpg": String(repeating: "l", count: 5000)]
        for (name, contents) in files { try writeFile(scratch + "/remote/" + name, contents) }
        let store = PreviewingStore(LocalDirectoryStore(root: scratch + "/remote"), previews: ["server.jpg": [1, 2, 3], "carries.jpg": [9]])
        let database = try StateDatabase(path: scratch + "/state.sqlite")
        defer { try? database.close() }
        let provider = SyncProvider(store: store, state: database)
        var ids: [ItemIdentifier: String] = [:]
        for entry in try await store.children(of: .root) {
            let record = try provider.record(at: entry.path, item: nil, kind: .file, remote: entry,
                                             local: LocalStat(inode: 1, size: entry.size, modificationTimeNanoseconds: 0),
                                             materialization: .dataless, operation: nil)
            ids[record.id] = entry.path.description
        }
        let names = ids
        let found = Mutex<[String: ThumbnailSource?]>([:])
        await provider.fetchThumbnails(for: Array(ids.keys), options: ThumbnailFetchOptions(maxWholeFetch: 1000), locator: Locator()) { id, result in
            found.withLock { $0[names[id]!] = try? result.get() }
        }
        let sources = found.withLock { $0 }
        #expect(sources["carries.jpg"]??.origin == .embedded && sources["carries.jpg"]??.bytes == Array("thum".utf8))
        #expect(sources["server.jpg"]??.origin == .server && sources["server.jpg"]??.bytes == [1, 2, 3])
        #expect(sources["small.jpg"]??.origin == .whole && sources["small.jpg"]??.bytes.count == 500)
        #expect(sources.keys.contains("large.jpg") && sources["large.jpg"]! == nil)
        // The server was not asked for a file whose own preview served.
        #expect(Set(store.asked.withLock { $0 }) == ["server.jpg", "small.jpg", "large.jpg"])
    }
}
