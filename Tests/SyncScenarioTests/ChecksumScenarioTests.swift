import Foundation
import LocalStore
import Logging
import Replica
import SyncEngine
import Testing
import TestSupport

/// Two versions with identical bytes are not a conflict. Where the server offers a
/// checksum (Nextcloud's `oc:checksums`), the engine compares it with the local file's
/// instead of downloading; where it does not, it downloads and compares bytes (the other
/// scenarios).
@Suite("Server checksums")
struct ChecksumScenarioTests {
    @Test("with a server checksum, identical bytes are found equal without a download; other bytes of one size keep both")
    func serverChecksum() async throws {
        try await withWorld(.localDirectory) { world in
            let store = ChecksummingStore(root: world.remoteDisk)
            var logger = Logger(label: "checksum")
            logger.logLevel = .warning
            let runner = PlanRunner(provider: SyncProvider(store: store, state: world.database),
                                    folder: LocalFolder(root: world.localRoot), transfers: 4, logger: logger)
            let pass = SyncPass(runner: runner, scanner: LocalScanner(root: world.localRoot, exclude: ExcludeList(patterns: [])),
                                host: "testhost", logger: logger)
            try world.write("same.txt", "identical")
            try world.writeOnServer("same.txt", "identical")
            try world.write("diff.txt", "ours!")
            try world.writeOnServer("diff.txt", "their")
            var passes = 0
            while try await pass.run().steps > 0 {
                passes += 1
                if passes > 4 { Issue.record("no agreement after 4 passes"); break }
            }
            #expect(store.downloads(of: "same.txt") == 0, "compared by checksum, not downloaded")
            #expect(store.downloads(of: "diff.txt") == 1, "the different version is brought down once")
            #expect(world.localCopies(of: "same.txt").isEmpty)
            let copies = world.localCopies(of: "diff.txt")
            #expect(copies.count == 1)
            #expect(readFile(world.local("diff.txt")) == "their" && world.serverText("diff.txt") == "their")
            #expect(copies.first.map { readFile(world.local($0)) == "ours!" && world.serverText($0) == "ours!" } == true)
            let conflicts = try world.database.conflicts()
            #expect(conflicts.map(\.original.description) == ["diff.txt"])
            try await world.expectAgreement()
        }
    }
}

/// The local-directory store offering SHA-1 checksums in its listings, as Nextcloud does
/// for files uploaded with one, and counting downloads by path.
final class ChecksummingStore: RemoteStore, @unchecked Sendable {
    let inner: LocalDirectoryStore
    let root: String
    private let lock = NSLock()
    private var counts: [String: Int] = [:]

    init(root: String) {
        inner = LocalDirectoryStore(root: root)
        self.root = root
    }

    func downloads(of path: String) -> Int { lock.withLock { counts[path] ?? 0 } }

    func offering(_ entry: RemoteEntry) -> RemoteEntry {
        guard entry.kind == .file, let data = FileManager.default.contents(atPath: root + "/" + entry.path.description) else { return entry }
        var digest = ContentDigest(.sha1)
        data.withUnsafeBytes { digest.update($0) }
        var result = entry
        result.checksums = "SHA1:\(digest.hex()) ADLER32:00000000"
        return result
    }

    func entry(at path: RemotePath) async throws(ProviderError) -> RemoteEntry { offering(try await inner.entry(at: path)) }
    func children(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry] { try await inner.children(of: path).map(offering) }
    func descendants(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry] {
        try await inner.descendants(of: path).map(offering)
    }
    func download(_ path: RemotePath, range: ByteRange?, version: ETag?, to destination: URL,
                  progress: TransferProgress?) async throws(ProviderError) -> ETag? {
        lock.withLock { counts[path.description, default: 0] += 1 }
        return try await inner.download(path, range: range, version: version, to: destination, progress: progress)
    }
    func upload(from source: URL, to path: RemotePath, condition: WriteCondition,
                progress: TransferProgress?) async throws(ProviderError) -> RemoteEntry {
        try await inner.upload(from: source, to: path, condition: condition, progress: progress)
    }
    func makeFolder(at path: RemotePath) async throws(ProviderError) -> RemoteEntry { try await inner.makeFolder(at: path) }
    func makeSymlink(at path: RemotePath, target: String, condition: WriteCondition) async throws(ProviderError) -> RemoteEntry {
        try await inner.makeSymlink(at: path, target: target, condition: condition)
    }
    func move(_ source: RemotePath, to destination: RemotePath, version: ETag?) async throws(ProviderError) -> RemoteEntry {
        try await inner.move(source, to: destination, version: version)
    }
    func delete(_ path: RemotePath, version: ETag?) async throws(ProviderError) { try await inner.delete(path, version: version) }
}
