/// A domain pointed at another remote: what the pass did about it, for logs and status.
public struct RemoteChange: Sendable, Equatable {
    /// The remote the state DB described.
    public var from: RemoteIdentity
    /// The remote the domain is configured with now.
    public var to: RemoteIdentity

    public init(from: RemoteIdentity, to: RemoteIdentity) {
        self.from = from
        self.to = to
    }

    /// The sentence logged and shown in status.
    public func message(domain: String) -> String {
        "the remote of domain \(domain) changed from \(from) to \(to): merging both trees as a first sync; nothing is deleted"
    }
}
