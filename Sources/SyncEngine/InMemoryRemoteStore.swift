// Durability contract: none — everything lives in this process and is gone with it.
// Within the process a write lands whole or not at all: the bytes are read into a
// `Content` first, and the tree is changed under the lock only after the version check.
import Foundation
import Synchronization

/// A `RemoteStore` held in memory, for fast engine tests. It honours the same contract
/// as the real adapters (the contract suite runs over it): guarded writes, moves that
/// never overwrite, recursive deletes, ranges clamped to the end of the file.
///
/// Every content write gets a new strong ETag from a counter; folders and symlinks
/// get one when created. A file keeps its file id across moves and overwrites. File
/// contents above `inlineLimit` bytes are kept in a private temporary file instead of
/// RAM, because the contract also says large files stream without being held in memory.
/// Thread-safe: all state is behind one `Mutex`; bytes are copied outside it.
public final class InMemoryRemoteStore: RemoteStore, Sendable {
    private let state: Mutex<State>
    private let reportsFileIDs: Bool
    private let inlineLimit: Int64
    private let spillDirectory: URL

    /// An empty store holding only its root folder. With `fileIDs: false` entries carry
    /// no file id, like a WebDAV server without `oc:fileid`. File contents over
    /// `inlineLimit` bytes live in a temporary file, removed when the store goes away.
    public init(fileIDs: Bool = true, inlineLimit: Int64 = 16 << 20) {
        reportsFileIDs = fileIDs
        self.inlineLimit = inlineLimit
        spillDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("tidesync-memory-store-\(UUID().uuidString)")
        state = Mutex(State())
    }

    deinit { try? FileManager.default.removeItem(at: spillDirectory) }

    // MARK: Test hooks

    /// Creates or replaces the file at `path` as another client would (creating missing
    /// parent folders), giving it a new version.
    public func setFile(_ path: RemotePath, contents: Data) {
        let content = Content(bytes: Data(contents))
        state.withLock { s in
            var missing: [RemotePath] = []
            var folder = path.parent
            while s.nodes[folder] == nil { missing.append(folder); folder = folder.parent }
            precondition(s.nodes[folder]?.kind == .folder, "setFile: \(folder) is not a folder")
            for parent in missing.reversed() { s.nodes[parent] = s.newNode(.folder) }
            let previous = s.nodes[path]
            s.removeTree(at: path)
            s.nodes[path] = s.newNode(.file, content: content, fileID: previous?.kind == .file ? previous?.fileID : nil)
        }
    }

    /// The bytes of the file at `path`, or nil when there is no file there.
    public func contents(of path: RemotePath) -> Data? {
        let content = state.withLock { s in s.nodes[path]?.content }
        guard let content else { return nil }
        return try? content.read(ByteRange(offset: 0, length: content.size))
    }

    /// Makes the next operation (of any kind) fail with `code` without doing anything,
    /// to simulate an outage. Calls queue up: two calls fail the next two operations.
    public func failNext(_ code: ProviderError.Code) {
        state.withLock { $0.failures.append(code) }
    }

    /// Makes the folder at `path` refuse to be listed with `error` (as a server answering
    /// 403 for it), until `allowListing(of:)`: it still shows in its parent's listing.
    public func refuseListing(of path: RemotePath, with error: ProviderError) {
        state.withLock { $0.unlistable[path] = error }
    }

    /// Lists the folder at `path` again.
    public func allowListing(of path: RemotePath) {
        state.withLock { $0.unlistable[path] = nil }
    }

    // MARK: RemoteStore

    public func entry(at path: RemotePath) async throws(ProviderError) -> RemoteEntry {
        try withState { s throws(ProviderError) in try entry(s.existing(path), at: path) }
    }

    public func children(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry] {
        try listing(of: path) { $0.parent == path }
    }

    public func descendants(of path: RemotePath) async throws(ProviderError) -> [RemoteEntry] {
        try await listing(below: path).complete(below: path)
    }

    public func listing(below path: RemotePath) async throws(ProviderError) -> RemoteListing {
        let (refused, unlistable) = state.withLock { s in (s.unlistable[path], s.unlistable) }
        if let refused { throw refused }
        let unknown = UnknownSubtrees(unlistable.keys)
        // An unlistable folder shows in its parent's listing; nothing below it does.
        let entries = try listing(of: path) { $0.isDescendant(of: path) && !unknown.contains($0.parent) }
        let folders = Set(entries.filter { $0.kind == .folder }.map(\.path))
        return RemoteListing(entries: entries, unlisted: unlistable.filter { folders.contains($0.key) })
    }

    public func download(_ path: RemotePath, range: ByteRange?, version: ETag?, to destination: URL,
                         progress: TransferProgress?) async throws(ProviderError) -> ETag? {
        let (content, etag) = try withState { s throws(ProviderError) -> (Content, ETag) in
            let node = try s.existing(path)
            guard node.kind == .file, let content = node.content else {
                throw ProviderError(.cannotSynchronize, "\(path) is not a file; it has no contents to download")
            }
            if let version { try State.check(node, matches: version, path: path) }
            return (content, node.etag)
        }
        let requested = range ?? ByteRange(offset: 0, length: content.size)
        let start = min(requested.offset, content.size)
        let wanted = ByteRange(offset: start, length: min(requested.end, content.size) - start)
        do {
            try content.write(wanted, to: destination)
        } catch {
            throw ProviderError(.cannotSynchronize, "cannot write \(destination.path)", underlying: "\(error)")
        }
        progress?(wanted.length, wanted.length)
        return etag
    }

    public func upload(from source: URL, to path: RemotePath, condition: WriteCondition,
                       progress: TransferProgress?) async throws(ProviderError) -> RemoteEntry {
        try withState { s throws(ProviderError) in try s.checkParent(of: path) }
        let before = Self.status(of: source)
        let content = try Content(copying: source, inlineLimit: inlineLimit, spillDirectory: spillDirectory)
        progress?(content.size, content.size)
        // As a real store: a source changed while it was sent is not published.
        guard before != nil, Self.status(of: source) == before else {
            throw ProviderError(.cannotSynchronize, "\(source.path) changed while it was uploaded; it will be sent again")
        }
        return try state.withLock { s throws(ProviderError) -> RemoteEntry in
            try write(.file, content: content, at: path, condition: condition, in: &s)
        }
    }

    /// Size, modification time and file number of `source`, or nil when it cannot be read.
    static func status(of source: URL) -> [String]? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: source.path) else { return nil }
        return [attributes[.size], attributes[.modificationDate], attributes[.systemFileNumber]].map { "\($0 ?? "-")" }
    }

    public func makeFolder(at path: RemotePath) async throws(ProviderError) -> RemoteEntry {
        try withState { s throws(ProviderError) -> RemoteEntry in
            try s.checkParent(of: path)
            try s.check(.mustNotExist, at: path)
            s.nodes[path] = s.newNode(.folder)
            return try entry(s.existing(path), at: path)
        }
    }

    public func makeSymlink(at path: RemotePath, target: String,
                            condition: WriteCondition) async throws(ProviderError) -> RemoteEntry {
        try withState { s throws(ProviderError) -> RemoteEntry in
            try s.checkParent(of: path)
            return try write(.symlink, target: target, at: path, condition: condition, in: &s)
        }
    }

    public func move(_ source: RemotePath, to destination: RemotePath,
                     version: ETag?) async throws(ProviderError) -> RemoteEntry {
        try withState { s throws(ProviderError) -> RemoteEntry in
            let node = try s.existing(source)
            if let version { try State.check(node, matches: version, path: source) }
            guard !source.isRoot, !destination.isDescendant(of: source) else {
                throw ProviderError(.cannotSynchronize, "cannot move \(source) into itself")
            }
            try s.checkParent(of: destination)
            try s.check(.mustNotExist, at: destination)
            for (path, moved) in s.nodes where path.isDescendant(of: source) {
                s.nodes[path] = nil
                s.nodes[State.rebase(path, from: source, to: destination)] = moved
            }
            return entry(node, at: destination)
        }
    }

    public func delete(_ path: RemotePath, version: ETag?) async throws(ProviderError) {
        try withState { s throws(ProviderError) in
            guard !path.isRoot else { throw ProviderError(.cannotSynchronize, "refusing to delete the store's root") }
            let node = try s.existing(path)
            if let version { try State.check(node, matches: version, path: path) }
            s.removeTree(at: path)
        }
    }

    // MARK: Internals

    /// Runs `body` under the lock after consuming a simulated failure, if one is queued.
    private func withState<T: Sendable>(_ body: (inout State) throws(ProviderError) -> T) throws(ProviderError) -> T {
        try state.withLock { s throws(ProviderError) -> T in
            if !s.failures.isEmpty {
                let code = s.failures.removeFirst()
                throw ProviderError(code, "simulated failure of the in-memory store")
            }
            return try body(&s)
        }
    }

    private func listing(of path: RemotePath,
                         where included: (RemotePath) -> Bool) throws(ProviderError) -> [RemoteEntry] {
        try withState { s throws(ProviderError) -> [RemoteEntry] in
            if let refused = s.unlistable[path] { throw refused }
            guard try s.existing(path).kind == .folder else {
                throw ProviderError(.noSuchItem, "\(path) is not a folder in the store")
            }
            return s.nodes.filter { $0.key != path && included($0.key) }.map { entry($0.value, at: $0.key) }
        }
    }

    /// Stores a file or symlink at `path` after checking `condition`; keeps the file id of
    /// the item it replaces. Only an item of the same kind can be replaced.
    private func write(_ kind: ItemKind, content: Content? = nil, target: String? = nil, at path: RemotePath,
                       condition: WriteCondition, in s: inout State) throws(ProviderError) -> RemoteEntry {
        try s.checkParent(of: path)
        try s.check(condition, at: path)
        let previous = s.nodes[path]
        if let previous, previous.kind != kind {
            throw ProviderError(.filenameCollision, "\(path) is a \(previous.kind.rawValue) in the store")
        }
        let node = s.newNode(kind, content: content, target: target, fileID: previous?.fileID)
        s.nodes[path] = node
        return entry(node, at: path)
    }

    private func entry(_ node: Node, at path: RemotePath) -> RemoteEntry {
        RemoteEntry(path: path, kind: node.kind, size: node.content?.size ?? 0, etag: node.etag,
                    fileID: reportsFileIDs ? node.fileID : nil, modificationDate: node.modified,
                    symlinkTarget: node.symlinkTarget)
    }
}

/// One item of the in-memory tree.
private struct Node: Sendable {
    var kind: ItemKind
    var content: Content?
    var symlinkTarget: String?
    var etag: ETag
    var fileID: String
    var modified: Date
}

/// The whole tree, keyed by path; the root is always present.
private struct State: Sendable {
    var nodes: [RemotePath: Node] = [:]
    var counter: UInt64 = 0
    var failures: [ProviderError.Code] = []
    /// Folders that refuse to be listed (`refuseListing`), with the error they answer.
    var unlistable: [RemotePath: ProviderError] = [:]

    init() { nodes[.root] = newNode(.folder) }

    mutating func newNode(_ kind: ItemKind, content: Content? = nil, target: String? = nil,
                          fileID: String? = nil) -> Node {
        counter += 1
        return Node(kind: kind, content: content, symlinkTarget: target, etag: ETag(value: "m\(counter)"),
                    fileID: fileID ?? "id\(counter)", modified: Date())
    }

    func existing(_ path: RemotePath) throws(ProviderError) -> Node {
        guard let node = nodes[path] else { throw ProviderError(.noSuchItem, "\(path) does not exist in the store") }
        return node
    }

    func checkParent(of path: RemotePath) throws(ProviderError) {
        guard !path.isRoot, nodes[path.parent]?.kind == .folder else {
            throw ProviderError(.parentMissing, "the folder \(path.parent) does not exist in the store")
        }
    }

    func check(_ condition: WriteCondition, at path: RemotePath) throws(ProviderError) {
        switch condition {
        case .mustNotExist:
            if nodes[path] != nil { throw ProviderError(.filenameCollision, "\(path) already exists in the store") }
        case .mustMatch(let version):
            guard let node = nodes[path] else { throw ProviderError(.noSuchItem, "\(path) no longer exists in the store") }
            try Self.check(node, matches: version, path: path)
        }
    }

    static func check(_ node: Node, matches version: ETag, path: RemotePath) throws(ProviderError) {
        guard node.etag.sameValue(as: version) else {
            throw ProviderError(.versionMismatch, "\(path) changed in the store since version \(version)")
        }
    }

    mutating func removeTree(at path: RemotePath) {
        for key in nodes.keys where key.isDescendant(of: path) { nodes[key] = nil }
    }

    /// `path` (at or below `source`) as it is after `source` moved to `destination`.
    static func rebase(_ path: RemotePath, from source: RemotePath, to destination: RemotePath) -> RemotePath {
        var result = destination
        for name in path.components.dropFirst(source.components.count) {
            result = (try? result.appending(name)) ?? result
        }
        return result
    }
}

/// The immutable bytes of one file version: in memory, or in a private temporary file
/// (removed when the last version referring to it goes away).
private final class Content: Sendable {
    private enum Storage { case bytes(Data), spilled(URL) }
    private static let chunkSize = 1 << 20
    private let storage: Storage
    let size: Int64

    init(bytes: Data) {
        storage = .bytes(bytes)
        size = Int64(bytes.count)
    }

    /// Copies the file at `source`; files over `inlineLimit` bytes go to `spillDirectory`.
    init(copying source: URL, inlineLimit: Int64, spillDirectory: URL) throws(ProviderError) {
        do {
            let input = try FileHandle(forReadingFrom: source)
            defer { try? input.close() }
            let length = Int64(try input.seekToEnd())
            try input.seek(toOffset: 0)
            size = length
            if length <= inlineLimit {
                storage = .bytes(try input.readToEnd() ?? Data())
                return
            }
            try FileManager.default.createDirectory(at: spillDirectory, withIntermediateDirectories: true)
            let spill = spillDirectory.appendingPathComponent(UUID().uuidString)
            storage = .spilled(spill)
            try Self.copy(from: input, length: length, to: spill)
        } catch {
            throw ProviderError(.cannotSynchronize, "cannot read \(source.path) for upload", underlying: "\(error)")
        }
    }

    deinit { if case .spilled(let url) = storage { try? FileManager.default.removeItem(at: url) } }

    /// Writes the bytes of `range` (clamped to the size) to a new file at `destination`,
    /// streamed when the content is spilled.
    func write(_ range: ByteRange, to destination: URL) throws {
        guard case .spilled(let url) = storage else { return try read(range).write(to: destination) }
        let input = try FileHandle(forReadingFrom: url)
        defer { try? input.close() }
        try input.seek(toOffset: UInt64(range.offset))
        try Self.copy(from: input, length: range.length, to: destination)
    }

    /// The bytes of `range` (clamped to the size), in memory.
    func read(_ range: ByteRange) throws -> Data {
        switch storage {
        case .bytes(let bytes):
            return Data(bytes.dropFirst(Int(range.offset)).prefix(Int(range.length)))
        case .spilled(let url):
            let input = try FileHandle(forReadingFrom: url)
            defer { try? input.close() }
            try input.seek(toOffset: UInt64(range.offset))
            return try input.read(upToCount: Int(range.length)) ?? Data()
        }
    }

    private static func copy(from input: FileHandle, length: Int64, to destination: URL) throws {
        guard FileManager.default.createFile(atPath: destination.path, contents: nil) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: destination.path])
        }
        let output = try FileHandle(forWritingTo: destination)
        defer { try? output.close() }
        var done: Int64 = 0
        while done < length, let chunk = try input.read(upToCount: Int(min(Int64(chunkSize), length - done))),
              !chunk.isEmpty {
            try output.write(contentsOf: chunk)
            done += Int64(chunk.count)
        }
    }
}
