/// The identity of an item, assigned by the engine when it first sees the item
/// and kept across renames and moves on either side. It is never a path.
public struct ItemIdentifier: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The stored form: `root` for the domain's root folder, otherwise a UUID string.
    public let rawValue: String

    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// The domain's root folder: the sync folder locally, the remote URL's folder remotely.
    public static let root = ItemIdentifier("root")

    public var description: String { rawValue }
}

/// What an item is. A bundle is a directory that syncs as one item (DESIGN.md, "Bundles").
public enum ItemKind: String, Sendable, Codable, CaseIterable {
    case file, folder, symlink, bundle
}

/// How much of a file's data is on the local disk (DESIGN.md, "Dataless placeholders").
public enum Materialization: String, Sendable, Codable, CaseIterable {
    /// A sparse placeholder of the true size holding no data.
    case dataless
    /// Some byte ranges are hydrated; the DB lists them.
    case partial
    /// Every byte is on disk.
    case materialized
}

/// Whether an item must stay downloaded (Windows Cloud Files / macOS semantics).
public enum PinState: String, Sendable, Codable, CaseIterable {
    /// Follows its parent's pin state.
    case inherited
    /// Always kept downloaded; new children inherit it.
    case pinned
    /// May be evicted.
    case unpinned
}
