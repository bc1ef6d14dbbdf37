import Foundation
import Replica
import SyncEngine
import Testing

/// The "off" placeholder port: whole files through a temporary renamed into place, nothing
/// dataless, eviction refused with a message that says how to turn files on demand on.
@Suite struct PlaceholdersOffTests {
    func p(_ s: String) -> RemotePath { try! RemotePath(string: s) }

    func port() throws -> (PlaceholdersOff, String) {
        let root = NSTemporaryDirectory() + "tidesync-off-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        return (PlaceholdersOff(folder: LocalFolder(root: root)), root)
    }

    /// Bytes that write `text` for a whole fetch and fail any range fetch, counting calls.
    final class Source: @unchecked Sendable {
        private let lock = NSLock()
        private var wholeCalls = 0
        private var rangeCalls = 0
        var counts: (whole: Int, range: Int) { lock.withLock { (wholeCalls, rangeCalls) } }

        func bytes(_ text: String, version: ETag?) -> RemoteBytes {
            RemoteBytes(whole: { destination async throws(ProviderError) -> ETag? in
                self.lock.withLock { self.wholeCalls += 1 }
                do { try Data(text.utf8).write(to: destination) } catch {
                    throw ProviderError(.cannotSynchronize, "cannot write \(destination.path)")
                }
                return version
            }, range: { _, _ async throws(ProviderError) -> ByteRange in
                self.lock.withLock { self.rangeCalls += 1 }
                throw ProviderError(.cannotSynchronize, "the off port must not fetch ranges")
            })
        }
    }

    @Test func aRemoteFileComesDownWholeWithItsTimeAndVersion() async throws {
        let (port, root) = try port()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let source = Source()
        let mtime = Date(timeIntervalSince1970: 1_700_000_000)
        var entry = RemoteEntry(path: p("a.txt"), kind: .file, size: 5, etag: ETag(value: "v1"))
        entry.modificationDate = mtime
        let placed = try await port.bringDown(entry, at: p("a.txt"), replacing: nil,
                                              temporary: port.folder.temporaryURL(beside: p("a.txt")),
                                              bytes: source.bytes("hello", version: ETag(value: "v1")))
        #expect(placed.state == .materialized)
        #expect(placed.version == ETag(value: "v1"))
        #expect(placed.stat == port.folder.entry(at: p("a.txt"))?.stat)
        #expect(try String(contentsOfFile: root + "/a.txt", encoding: .utf8) == "hello")
        let attributes = try FileManager.default.attributesOfItem(atPath: root + "/a.txt")
        #expect((attributes[.modificationDate] as? Date).map { abs($0.timeIntervalSince(mtime)) < 1 } == true)
        #expect(try port.state(of: p("a.txt")) == .materialized)
        #expect(try await port.hydrate(p("a.txt"), range: ByteRange(offset: 0, length: 5), bytes: source.bytes("x", version: nil))
                == .materialized)
        #expect(try await port.materialize(p("a.txt"), bytes: source.bytes("x", version: nil)).stat == placed.stat)
        #expect(source.counts.whole == 1 && source.counts.range == 0, "the off port fetched what it already had")
        #expect(try FileManager.default.contentsOfDirectory(atPath: root) == ["a.txt"], "a temporary was left behind")
    }

    @Test func aDownloadReplacesOnlyTheFileThePlanSaw() async throws {
        let (port, root) = try port()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data("mine".utf8).write(to: URL(fileURLWithPath: root + "/a.txt"))
        let seen = try #require(port.folder.entry(at: p("a.txt"))).stat
        let entry = RemoteEntry(path: p("a.txt"), kind: .file, size: 6, etag: ETag(value: "v2"))
        // Something put a file there that the plan did not see: it stays.
        await #expect(throws: ProviderError.self) {
            _ = try await port.bringDown(entry, at: p("a.txt"), replacing: nil,
                                         temporary: port.folder.temporaryURL(beside: p("a.txt")),
                                         bytes: Source().bytes("theirs", version: nil))
        }
        #expect(try String(contentsOfFile: root + "/a.txt", encoding: .utf8) == "mine")
        _ = try await port.bringDown(entry, at: p("a.txt"), replacing: seen,
                                     temporary: port.folder.temporaryURL(beside: p("a.txt")),
                                     bytes: Source().bytes("theirs", version: nil))
        #expect(try String(contentsOfFile: root + "/a.txt", encoding: .utf8) == "theirs")
    }

    /// Many downloads at once are placed in rounds (one file-system sync for each round's
    /// bytes, one for its renames): each lands with its own bytes and time, in folders of
    /// its own; one whose name another program took meanwhile fails alone and leaves that
    /// file as it was; nothing temporary stays.
    @Test func manyDownloadsAtOnceEachLandOrFailAlone() async throws {
        let (port, root) = try port()
        defer { try? FileManager.default.removeItem(atPath: root) }
        for folder in ["x", "y"] { try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: false) }
        try Data("theirs".utf8).write(to: URL(fileURLWithPath: root + "/x/f7.txt"))
        let mtime = Date(timeIntervalSince1970: 1_700_000_000)
        let outcomes = await withTaskGroup(of: (Int, Bool).self) { group in
            for index in 0..<40 {
                group.addTask {
                    let path = self.p("\(index % 2 == 0 ? "y" : "x")/f\(index).txt")
                    var entry = RemoteEntry(path: path, kind: .file, size: 4, etag: ETag(value: "v\(index)"))
                    entry.modificationDate = mtime
                    do {
                        _ = try await port.bringDown(entry, at: path, replacing: nil, temporary: port.folder.temporaryURL(beside: path),
                                                     bytes: Source().bytes("n\(index)", version: nil))
                        return (index, true)
                    } catch {
                        return (index, false)
                    }
                }
            }
            var outcomes: [Int: Bool] = [:]
            for await (index, placed) in group { outcomes[index] = placed }
            return outcomes
        }
        #expect(outcomes.filter { !$0.value }.map(\.key) == [7], "only the download whose name was taken fails")
        for index in 0..<40 where index != 7 {
            let path = root + "/\(index % 2 == 0 ? "y" : "x")/f\(index).txt"
            #expect(try String(contentsOfFile: path, encoding: .utf8) == "n\(index)")
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.modificationDate] as? Date).map { abs($0.timeIntervalSince(mtime)) < 1 } == true)
        }
        #expect(try String(contentsOfFile: root + "/x/f7.txt", encoding: .utf8) == "theirs")
        for folder in ["x", "y"] {
            let names = try FileManager.default.contentsOfDirectory(atPath: root + "/" + folder)
            #expect(names.count == 20 && !names.contains { LocalFolder.isTemporary($0) }, "\(names.sorted())")
        }
    }

    @Test func evictionIsRefusedAndSaysHowToTurnFilesOnDemandOn() async throws {
        let (port, root) = try port()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data("kept".utf8).write(to: URL(fileURLWithPath: root + "/a.txt"))
        do {
            _ = try await port.evict(p("a.txt"))
            Issue.record("evict succeeded with files on demand off")
        } catch {
            #expect(error.code == .cannotSynchronize)
            #expect(error.message.contains("[domain.placeholders]"))
        }
        #expect(try String(contentsOfFile: root + "/a.txt", encoding: .utf8) == "kept")
        #expect(throws: ProviderError.self) { try port.state(of: p("missing.txt")) }
        try FileManager.default.createDirectory(atPath: root + "/sub", withIntermediateDirectories: false)
        #expect(throws: ProviderError.self) { try port.state(of: p("sub")) }
    }
}
