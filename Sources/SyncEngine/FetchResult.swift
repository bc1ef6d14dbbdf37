import Foundation

/// The bytes `fetchContents` brought down: a file the caller now owns, and their version.
public struct FetchResult: Sendable {
    /// The file the bytes were written to (the destination the caller named), fsynced.
    public var contents: URL
    /// The remote version the bytes belong to.
    public var version: ItemVersion
}

/// The bytes `fetchPartialContents` brought down.
public struct PartialFetchResult: Sendable {
    public var contents: URL
    /// The range written to `contents` (from its offset 0): at least the minimal range,
    /// aligned, clamped to the file's size.
    public var range: ByteRange
    public var version: ItemVersion
}
