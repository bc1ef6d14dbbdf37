/// An opaque position in the remote change history of a domain (the working set's anchor).
public struct SyncAnchor: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
}
