/// An item as the engine knows it: its middle-man record and its path now.
public struct Item: Hashable, Sendable {
    public var record: ItemRecord
    public var path: RemotePath
    public var id: ItemIdentifier { record.id }
    public var version: ItemVersion { ItemVersion(content: record.remoteETag) }

    public init(record: ItemRecord, path: RemotePath) {
        self.record = record
        self.path = path
    }
}

/// The version of an item as the File Provider sees it: the remote content version the
/// local copy is based on. A write is guarded by it; a fetch may insist on it.
public struct ItemVersion: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The remote ETag; nil for an item that never reached the remote.
    public var content: ETag?

    public init(content: ETag?) { self.content = content }

    public var description: String { content.map(String.init(describing:)) ?? "(none)" }
}
