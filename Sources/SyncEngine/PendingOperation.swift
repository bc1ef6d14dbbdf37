import Foundation

/// An operation written to the journal before it starts, so a crash can replay it.
public struct PendingOperation: Hashable, Sendable, Codable {
    /// Assigned by the state store; increasing in journal order.
    public var id: Int64
    /// The item the operation is about, when it has one yet.
    public var itemID: ItemIdentifier?
    /// What the operation does, e.g. `upload`, `download`, `move`; the engine's vocabulary.
    public var kind: String
    /// The operation's arguments as the engine encoded them (JSON); replay decodes them.
    public var payload: Data
    public var createdAt: Date
    /// How many times it was tried and failed.
    public var attempts: Int
    /// Not to be tried before this time (backoff); nil: at once.
    public var notBefore: Date?
    /// The last failure, for status.
    public var lastError: String?

    public init(id: Int64 = 0, itemID: ItemIdentifier?, kind: String, payload: Data, createdAt: Date,
                attempts: Int = 0, notBefore: Date? = nil, lastError: String? = nil) {
        self.id = id
        self.itemID = itemID
        self.kind = kind
        self.payload = payload
        self.createdAt = createdAt
        self.attempts = attempts
        self.notBefore = notBefore
        self.lastError = lastError
    }
}
