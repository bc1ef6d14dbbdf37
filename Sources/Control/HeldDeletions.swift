/// Deletions a domain holds back until the user confirms them, as `status` reports them.
public struct HeldDeletions: Codable, Sendable, Equatable {
    /// `sideEmptied` (one side holds nothing while the other still holds synced items) or
    /// `massDelete` (more than `max_delete` items, or half of the domain).
    public var reason: String
    /// Where the deletions would be carried out: `local` (the sync folder), `remote` (the
    /// server) or `both`.
    public var side: String
    /// Items they delete, counting everything below a deleted folder.
    public var items: Int
    /// The command that carries them out once.
    public var release: String

    public init(reason: String, side: String, items: Int, release: String) {
        self.reason = reason
        self.side = side
        self.items = items
        self.release = release
    }

    /// One line for people: `held: 20 deletions in the sync folder (the server's folder is empty); …`.
    public var summary: String {
        let place = switch side {
        case "local": "in the sync folder"
        case "remote": "on the server"
        default: "on both sides"
        }
        let why = switch (reason, side) {
        case ("sideEmptied", "local"): " (the server's folder is empty)"
        case ("sideEmptied", _): " (the sync folder is empty)"
        default: " (more than max_delete, or half of the domain)"
        }
        return "held: \(items) deletion(s) \(place)\(why); to carry them out run `\(release)`"
    }
}
