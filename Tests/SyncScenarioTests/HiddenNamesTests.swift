import Foundation
import LocalStore
@testable import SyncEngine
import StateDatabase
import Testing
import TestSupport

/// A server whose listings leave out names beginning with "." (nginx's dav-ext module),
/// played by a local directory whose listings drop them: the items this machine synced
/// under such names are asked for by name, never read as deleted.
@Suite("Names a server's listings leave out")
struct HiddenNamesTests {
    /// Lists like nginx: no entry with a name beginning with "." (nor anything below one),
    /// and says so; `refused` answers 403 when asked for by name.
    final class HidingStore: ForwardingStore, @unchecked Sendable {
        let refused: Set<RemotePath>

        init(_ inner: any RemoteStore, refused: Set<RemotePath>) {
            self.refused = refused
            super.init(inner)
        }

        override func listing(below path: RemotePath) async throws(ProviderError) -> RemoteListing {
            var listing = try await inner.listing(below: path)
            listing.entries = listing.entries.filter { !$0.path.components.dropFirst(path.components.count).contains { $0.hasPrefix(".") } }
            listing.hidesDotNames = true
            return listing
        }

        override func entry(at path: RemotePath) async throws(ProviderError) -> RemoteEntry {
            if refused.contains(path) { throw ProviderError(.permissionDenied, "\(path): 403") }
            return try await inner.entry(at: path)
        }
    }

    @Test("recorded dot names are asked for: kept when there, deleted when gone, unknown when refused")
    func askedForByName() async throws {
        let scratch = temporaryPath("tidesync-hidden-")
        defer { removeTree(scratch) }
        let disk = scratch + "/remote"
        let files = ["a.txt", ".env", ".cfg/x.txt", ".cfg/.inner/y.txt", "sub/.hidden", ".refused", ".gone"]
        for file in files { try writeFile(disk + "/" + file, file) }
        let inner = LocalDirectoryStore(root: disk)
        let database = try StateDatabase(path: scratch + "/state.sqlite")
        defer { try? database.close() }
        let provider = SyncProvider(store: HidingStore(inner, refused: [try RemotePath([".refused"])]), state: database)
        for entry in try await inner.descendants(of: .root).sorted(by: { $0.path < $1.path }) {
            try provider.record(at: entry.path, item: nil, kind: entry.kind, remote: entry, local: nil, operation: nil)
        }
        try FileManager.default.removeItem(atPath: disk + "/.gone")
        try FileManager.default.removeItem(atPath: disk + "/.cfg/.inner")
        let batch = try await provider.changes(since: nil)
        let deleted = try Set(batch.deleted.map { try #require(try database.item($0)).name })
        #expect(deleted == [".gone", ".inner", "y.txt"], "taken as deleted: \(deleted.sorted())")
        #expect(batch.updated.isEmpty, "taken as changed: \(batch.updated.map(\.path))")
        #expect(batch.unlisted.keys.map(\.description) == [".refused"])
        for kept in [".env", ".cfg/x.txt", "sub/.hidden", ".refused"] {
            #expect(batch.snapshot[try RemotePath(string: kept)] != nil, "\(kept) missing from the snapshot")
        }
    }
}
