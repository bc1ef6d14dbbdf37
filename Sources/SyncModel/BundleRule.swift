/// Which folders are bundles: directories whose name ends in one of the domain's
/// `bundle_extensions` (`Foo.app`, `Report.pages`), synced as one item (DESIGN.md,
/// "Bundles"). Extensions compare without regard to ASCII case, as on macOS.
public struct BundleRule: Hashable, Sendable {
    /// The extensions, lowercased, without the dot.
    public let extensions: Set<String>

    /// A rule for `extensions` (with or without a leading dot, any case).
    public init(extensions: some Sequence<String>) {
        self.extensions = Set(extensions.map { ext in
            String((ext.hasPrefix(".") ? String(ext.dropFirst()) : ext).lowercased())
        }.filter { !$0.isEmpty })
    }

    /// The extensions bundles have when a domain sets none.
    public static let defaultExtensions = [
        "app", "bundle", "framework", "pages", "key", "numbers", "rtfd", "photoslibrary", "sparsebundle",
    ]

    public static let standard = BundleRule(extensions: defaultExtensions)
    /// No folder is a bundle.
    public static let none = BundleRule(extensions: [])

    /// True when a folder called `name` is a bundle. A name that is only an extension
    /// (`.app`) is a hidden folder, not a bundle.
    public func isBundle(name: String) -> Bool {
        guard !extensions.isEmpty, let dot = name.lastIndex(of: "."), dot != name.startIndex else { return false }
        let ext = name[name.index(after: dot)...]
        return !ext.isEmpty && extensions.contains(ext.lowercased())
    }

    /// The outermost bundle that `path` lies strictly inside, or nil. Every ancestor of a
    /// path is a folder, so its name alone decides.
    public func enclosingBundle(of path: RemotePath) -> RemotePath? {
        guard !extensions.isEmpty, path.components.count > 1 else { return nil }
        for depth in 1..<path.components.count where isBundle(name: path.components[depth - 1]) {
            return RemotePath(validated: Array(path.components.prefix(depth)))
        }
        return nil
    }

    /// `path`, or the outermost bundle it lies inside: the item a change at `path` is a
    /// change of.
    public func item(for path: RemotePath) -> RemotePath {
        enclosingBundle(of: path) ?? path
    }
}
