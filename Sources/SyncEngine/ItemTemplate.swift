/// What the replica knows of an item it hands to the engine: where it is and what it is.
public struct ItemTemplate: Hashable, Sendable {
    /// The item's identifier; nil for an item the engine has not seen (a create).
    public var id: ItemIdentifier?
    public var parentID: ItemIdentifier
    public var name: String
    public var kind: ItemKind
    /// For symlinks, the target as written.
    public var symlinkTarget: String?
    /// The stat of the local item whose contents are handed over, recorded with the new
    /// remote version so the replica's next look sees "unchanged".
    public var local: LocalStat?
    /// For bundles: the members found in the directory the contents URL names, hashed.
    public var bundleMembers: [BundleMember]?

    public init(id: ItemIdentifier? = nil, parentID: ItemIdentifier, name: String, kind: ItemKind,
                symlinkTarget: String? = nil, local: LocalStat? = nil, bundleMembers: [BundleMember]? = nil) {
        self.id = id
        self.parentID = parentID
        self.name = name
        self.kind = kind
        self.symlinkTarget = symlinkTarget
        self.local = local
        self.bundleMembers = bundleMembers
    }
}

/// Which fields of an item a `modifyItem` call changes.
public struct ItemFields: OptionSet, Hashable, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The bytes (files) or the target (symlinks).
    public static let contents = ItemFields(rawValue: 1 << 0)
    /// The name in its folder.
    public static let filename = ItemFields(rawValue: 1 << 1)
    /// The folder it is in.
    public static let parentItemIdentifier = ItemFields(rawValue: 1 << 2)
}
