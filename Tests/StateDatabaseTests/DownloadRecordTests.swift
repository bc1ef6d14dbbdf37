import Foundation
@testable import StateDatabase
import SyncEngine
import SyncModel
import Testing

/// A round of downloads recorded in one transaction (`SyncProvider.record(_:)`): each file
/// as `record(at:)` records it, its journal entry completed with it; a file that cannot be
/// recorded fails alone and keeps its entry.
@Suite struct DownloadRecordTests {
    static func p(_ text: String) -> RemotePath { try! RemotePath(string: text) }

    @Test func aRoundRecordsEachFileAndCompletesItsEntryAndAFileWithoutItsFolderFailsAlone() throws {
        try withStateDatabase { database in
            let provider = SyncProvider(store: InMemoryRemoteStore(), state: database)
            let paths = [Self.p("a.txt"), Self.p("missing/b.txt"), Self.p("c.txt")]
            let operations = try provider.journal(paths.map {
                PendingOperation(itemID: nil, kind: "download", payload: Data("\($0)".utf8), createdAt: Date())
            })
            let files = paths.enumerated().map { index, path in
                SyncProvider.FileRecord(path: path, item: nil,
                                        remote: RemoteEntry(path: path, kind: .file, size: Int64(index + 1), etag: ETag(value: "v\(index)")),
                                        local: LocalStat(inode: UInt64(100 + index), size: Int64(index + 1), modificationTimeNanoseconds: 1_000),
                                        materialization: .materialized, operation: operations[index])
            }
            let outcomes = provider.record(files)
            #expect(outcomes.count == 3)
            let a = try outcomes[0].get(), c = try outcomes[2].get()
            #expect(throws: ProviderError.self) { try outcomes[1].get() }
            if case .failure(let error) = outcomes[1] { #expect(error.code == .parentMissing) }
            #expect(try database.item(a.id) == a && a.name == "a.txt" && a.remoteETag == ETag(value: "v0") && a.local?.inode == 100)
            #expect(try database.item(c.id) == c && c.name == "c.txt" && c.remoteETag == ETag(value: "v2") && c.local?.inode == 102)
            #expect(try database.allItems().filter { $0.kind == .file }.map(\.name).sorted() == ["a.txt", "c.txt"])
            #expect(try provider.pendingOperations().map(\.id) == [operations[1]], "only the failed file's entry stays")

            // Recorded again (a replay), a file keeps its row.
            let again = provider.record([files[0]])
            #expect(try again[0].get().id == a.id)
        }
    }

    @Test func anEmptyRoundRecordsNothing() throws {
        try withStateDatabase { database in
            let provider = SyncProvider(store: InMemoryRemoteStore(), state: database)
            #expect(provider.record([]).isEmpty)
            let files = try database.allItems().filter { $0.kind == .file }
            #expect(files.isEmpty)
        }
    }
}

extension DownloadRecordTests {
    static func file(_ path: RemotePath, item: ItemIdentifier? = nil, inode: UInt64) -> SyncProvider.FileRecord {
        SyncProvider.FileRecord(path: path, item: item, remote: RemoteEntry(path: path, kind: .file, size: 1, etag: ETag(value: "e\(inode)")),
                                local: LocalStat(inode: inode, size: 1, modificationTimeNanoseconds: 1_000),
                                materialization: .materialized, operation: nil)
    }

    /// A change the database refuses (a file under a name a folder's row holds) fails that
    /// file only: the others of the round are recorded on their own.
    @Test func aRefusedChangeFailsOnlyItsFile() throws {
        try withStateDatabase { database in
            let provider = SyncProvider(store: InMemoryRemoteStore(), state: database)
            try provider.record(at: Self.p("x"), item: nil, kind: .folder, remote: RemoteEntry(path: Self.p("x"), kind: .folder, size: 0, etag: nil),
                                local: nil, operation: nil)
            let outcomes = provider.record([Self.file(Self.p("a.txt"), inode: 1), Self.file(Self.p("x"), inode: 2),
                                            Self.file(Self.p("c.txt"), inode: 3)])
            #expect((try? outcomes[0].get()) != nil && (try? outcomes[2].get()) != nil)
            #expect((try? outcomes[1].get()) == nil, "a file took the name of a folder's row")
            let names = try database.allItems().map { "\($0.name):\($0.kind)" }.sorted()
            #expect(names.contains("a.txt:file") && names.contains("c.txt:file") && names.contains("x:folder") && !names.contains("x:file"))
        }
    }

    /// Two files of one round that resolve to one row (an item brought down at a new path,
    /// and a new file at the path its row still has) are recorded one after the other: the
    /// item moves, and the new file gets a row of its own.
    @Test func twoFilesResolvingToOneRowAreRecordedInTurn() throws {
        try withStateDatabase { database in
            let provider = SyncProvider(store: InMemoryRemoteStore(), state: database)
            let moved = try provider.record(at: Self.p("q.txt"), item: nil, kind: .file,
                                            remote: RemoteEntry(path: Self.p("q.txt"), kind: .file, size: 1, etag: nil), local: nil, operation: nil)
            let outcomes = provider.record([Self.file(Self.p("p.txt"), item: moved.id, inode: 1), Self.file(Self.p("q.txt"), inode: 2)])
            let p = try outcomes[0].get(), q = try outcomes[1].get()
            #expect(p.id == moved.id && q.id != moved.id)
            #expect(try database.item(moved.id)?.name == "p.txt")
            #expect(try database.item(q.id)?.name == "q.txt" && database.item(q.id)?.local?.inode == 2)
        }
    }
}
