import Foundation
import SyncEngine
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `exchangeBundle`: one atomic swap where the store has one (the local directory), guarded
/// by the bundle's derived version; `false` where it has none, with nothing changed.
@Suite("RemoteStore bundle exchange")
struct BundleExchangeContractTests {
    /// The version `SyncProvider.bundleListing` derives for the bundle at `path`.
    static func version(_ f: StoreFixture, _ path: RemotePath) async throws -> ETag? {
        let members = BundleManifest.members(of: path, in: try await f.store.descendants(of: path))
        return BundleManifest.bundleEntry(try await f.store.entry(at: path), members: members).etag
    }

    @Test("a swap guarded by the bundle's version, or false with nothing changed", arguments: StoreKind.available)
    func exchange(kind: StoreKind) async throws {
        try await withStore(kind) { (f: StoreFixture) async throws in
            for root in ["A.app", ".tidesync-bundle-T"] {
                _ = try await f.store.makeFolder(at: p(root))
                _ = try await f.store.makeFolder(at: p(root + "/Contents"))
            }
            _ = try await f.put(p("A.app/Contents/x"), "old")
            _ = try await f.put(p(".tidesync-bundle-T/Contents/x"), "new")
            let old = try #require(try await Self.version(f, p("A.app")))
            let stale = ETag(value: "bundle-0-0000")
            guard kind == .localDirectory else {
                #expect(try await f.store.exchangeBundle(p("A.app"), with: p(".tidesync-bundle-T"), version: old) == false)
                #expect(try await f.read(p("A.app/Contents/x")) == "old", "a store without exchange changed something")
                return
            }
            await expectCode(.versionMismatch) {
                try await f.store.exchangeBundle(p("A.app"), with: p(".tidesync-bundle-T"), version: stale)
            }
            #expect(try await f.read(p("A.app/Contents/x")) == "old", "a refused exchange swapped")
            await expectCode(.noSuchItem) {
                try await f.store.exchangeBundle(p("B.app"), with: p(".tidesync-bundle-T"), version: old)
            }
            #expect(try await f.store.exchangeBundle(p("A.app"), with: p(".tidesync-bundle-T"), version: old))
            #expect(try await f.read(p("A.app/Contents/x")) == "new")
            #expect(try await f.read(p(".tidesync-bundle-T/Contents/x")) == "old", "the old version is left where the new one was")
        }
    }

    @Test("a folder whose delete was cut short is gone after the next walk, whatever its age")
    func trashOfAKilledDelete() async throws {
        try await withStore(.localDirectory) { (f: StoreFixture) async throws in
            _ = try await f.store.makeFolder(at: p("docs"))
            _ = try await f.put(p("docs/keep.txt"), "keep")
            // What a delete killed between its rename and the end of its removal leaves.
            let trash = f.diskPath + "/docs/.tidesync-tmp-trash-1-2"
            try FileManager.default.createDirectory(atPath: trash + "/sub", withIntermediateDirectories: true)
            try Data("deleted".utf8).write(to: URL(fileURLWithPath: trash + "/sub/old.txt"))
            #expect(try await f.store.descendants(of: .root).map(\.path.description).sorted() == ["docs", "docs/keep.txt"])
            #expect(!FileManager.default.fileExists(atPath: trash))
        }
    }

    @Test("a server-side copy killed halfway is removed by the next walk; one still running is not")
    func leftoversOfAKilledCopy() async throws {
        try await withStore(.localDirectory) { (f: StoreFixture) async throws in
            _ = try await f.store.makeFolder(at: p("docs"))
            // A killed copier: its lock file is free, its tree half-made.
            let dead = f.diskPath + "/docs/.tidesync-tmp-1-1"
            #expect(FileManager.default.createFile(atPath: dead, contents: nil))
            try FileManager.default.createDirectory(atPath: dead + ".d/Contents", withIntermediateDirectories: true)
            // A live one: its lock file is held.
            let live = f.diskPath + "/docs/.tidesync-tmp-2-2"
            let held = open(live, O_WRONLY | O_CREAT, 0o600)
            defer { close(held) }
            #expect(flock(held, LOCK_EX) == 0)
            try FileManager.default.createDirectory(atPath: live + ".d/Contents", withIntermediateDirectories: true)
            #expect(try await f.store.descendants(of: .root).map(\.path.description) == ["docs"])
            #expect(!FileManager.default.fileExists(atPath: dead) && !FileManager.default.fileExists(atPath: dead + ".d"))
            #expect(FileManager.default.fileExists(atPath: live + ".d/Contents"), "a running copy was removed")
        }
    }
}
