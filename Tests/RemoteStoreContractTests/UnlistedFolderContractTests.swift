import Foundation
import SyncEngine
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `RemoteStore.listing(below:)`: a folder the store will not list is reported as unlisted,
/// with nothing below it, and the rest of the tree is listed — over every backend where
/// such a folder can be made for real: the in-memory store (a hook), Apache (a collection
/// named `unlistable-*` answers a listing with 403, see `packaging/dav-server.sh`), and the
/// local-directory store (a `chmod 000` folder, when not root: root reads it).
@Suite("RemoteStore contract: folders that cannot be listed")
struct UnlistedFolderContractTests {
    static var kinds: [StoreKind] {
        // Depth infinity lists the whole tree in one answer (mod_dav does not check access
        // below the requested collection), so nothing is left unlisted there.
        StoreKind.available.filter { $0 == .inMemory || $0 == .apache || ($0 == .localDirectory && getuid() != 0) }
    }

    @Test("a folder the store will not list is unlisted, with nothing below it; the rest is listed", arguments: kinds)
    func unlistedFolder(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            for folder in ["a", "a/unlistable-x", "a/unlistable-x/deep", "b"] { _ = try await f.store.makeFolder(at: p(folder)) }
            for file in ["a/ok.txt", "a/unlistable-x/f.txt", "a/unlistable-x/deep/g.txt", "b/two.txt"] { try await f.put(p(file), file) }
            let hidden = p("a/unlistable-x")
            refuse(hidden, in: f)
            defer { allow(hidden, in: f) }

            let listing = try await f.store.listing(below: .root)
            #expect(listing.entries.map(\.path).sorted() == ["a", "a/ok.txt", "a/unlistable-x", "b", "b/two.txt"].map(p).sorted())
            #expect(Array(listing.unlisted.keys) == [hidden])
            #expect(listing.unlisted[hidden]?.code != .noSuchItem, "an unlisted folder is not a missing one")
            // Callers that need the whole tree get an error, never a partial tree.
            await #expect(throws: ProviderError.self) { try await f.store.descendants(of: .root) }
            await #expect(throws: ProviderError.self) { try await f.store.listing(below: hidden) }
            #expect(try await f.store.listing(below: p("b")).entries.map(\.path) == [p("b/two.txt")])
        }
    }

    @Test("a local-directory store folder it cannot open is unlisted",
          .enabled(if: getuid() != 0, "root reads a chmod 000 folder; UnreadableFolderTests runs the real binary as uid 65534 against a local-directory store instead"))
    func localDirectoryAsUser() async throws {
        try await unlistedFolder(kind: .localDirectory)
    }

    func refuse(_ path: RemotePath, in f: StoreFixture) {
        switch f.kind {
        case .inMemory:
            (f.store as? InMemoryRemoteStore)?.refuseListing(of: path, with: ProviderError(.serverUnreachable, "the server failed PROPFIND", underlying: "HTTP 503"))
        case .localDirectory:
            chmod(f.diskPath + "/" + path.description, 0)
        default:
            break  // Apache: the name does it
        }
    }

    func allow(_ path: RemotePath, in f: StoreFixture) {
        switch f.kind {
        case .inMemory: (f.store as? InMemoryRemoteStore)?.allowListing(of: path)
        case .localDirectory: chmod(f.diskPath + "/" + path.description, 0o755)
        default: break
        }
    }
}
