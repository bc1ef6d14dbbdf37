import Foundation
import SyncEngine

/// A store that forwards every request to `inner`; test stores override the requests they
/// fault or hook (a MOVE the server refuses, another client's upload at a chosen moment).
class ForwardingStore: RemoteStore, @unchecked Sendable {
    let inner: any RemoteStore

    init(_ inner: any RemoteStore) { self.inner = inner }

    func entry(at path: RemotePath) async throws(ProviderError) -> RemoteEntry { try await inner.entry(at: path) }
    func children(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry] { try await inner.children(of: path) }
    func descendants(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry] { try await inner.descendants(of: path) }
    func listing(below path: RemotePath) async throws(ProviderError) -> RemoteListing { try await inner.listing(below: path) }
    func download(_ path: RemotePath, range: ByteRange?, version: ETag?, to destination: URL,
                  progress: TransferProgress?) async throws(ProviderError) -> ETag? {
        try await inner.download(path, range: range, version: version, to: destination, progress: progress)
    }
    func upload(from source: URL, to path: RemotePath, condition: WriteCondition,
                progress: TransferProgress?) async throws(ProviderError) -> RemoteEntry {
        try await inner.upload(from: source, to: path, condition: condition, progress: progress)
    }
    func makeFolder(at path: RemotePath) async throws(ProviderError) -> RemoteEntry { try await inner.makeFolder(at: path) }
    func makeSymlink(at path: RemotePath, target: String, condition: WriteCondition) async throws(ProviderError) -> RemoteEntry {
        try await inner.makeSymlink(at: path, target: target, condition: condition)
    }
    func delete(_ path: RemotePath, version: ETag?) async throws(ProviderError) { try await inner.delete(path, version: version) }
    func move(_ source: RemotePath, to destination: RemotePath, version: ETag?) async throws(ProviderError) -> RemoteEntry {
        try await inner.move(source, to: destination, version: version)
    }
}
