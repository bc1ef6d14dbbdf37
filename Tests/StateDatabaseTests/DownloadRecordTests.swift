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
