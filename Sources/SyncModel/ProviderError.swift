/// The one error type of the sync core. Its code mirrors `NSFileProviderError`
/// because the code decides what happens next (see `disposition`); the message is
/// for a person and says what to do. Never compare messages.
public struct ProviderError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What went wrong, in File Provider terms plus the few Linux needs.
    public enum Code: String, Sendable, Codable, CaseIterable {
        case noSuchItem
        case filenameCollision
        case serverUnreachable
        case notAuthenticated
        case insufficientQuota
        case cannotSynchronize
        case syncAnchorExpired
        case pageExpired
        case deletionRejected
        case directoryNotEmpty
        case excludedFromSync
        case versionNoLongerAvailable
        /// The other side no longer holds the version a change was based on: a conflict.
        case versionMismatch
        /// The parent folder of the target does not exist (WebDAV 409).
        case parentMissing
        /// The item is locked by another client (WebDAV 423); retried later.
        case locked
        /// The local disk is full (ENOSPC); the domain parks until space is freed.
        case localDiskFull
        /// The task doing the work was cancelled (shutdown); the work is redone later.
        case cancelled
        /// One pass would delete more than the domain allows without confirmation; its
        /// deletions wait until the user confirms (`tidesync run --allow-mass-delete`).
        case massDeletePaused
        /// The server refuses this one item to this user (WebDAV 403): it is skipped and
        /// tried again later, and the rest of the domain syncs on.
        case permissionDenied
        /// The server failed a request about one item (HTTP 500, 501, 505 …: a name it
        /// cannot store, a bug of its own): the item backs off and the rest of the domain
        /// syncs on; several in a row park the domain (`PlanRunner`). A server that is down
        /// (502, 503, 504, no answer) is `serverUnreachable`.
        case serverFailedItem
        /// The server's TLS certificate is not trusted (not by the system, `ca_file` or
        /// `certificate_sha256`); the domain parks until the setting or the server changes.
        case serverNotTrusted
    }

    /// What the caller should do with the work that failed.
    public enum Disposition: Sendable, Equatable {
        /// Try the same operation again after a backoff delay.
        case retry
        /// Record the item as failed with backoff and go on with the others.
        case skipItem
        /// Stop all work of the domain until the condition clears (auth, network, quota, disk).
        case parkDomain
        /// Not a failure of the operation: a decision is needed (conflict, collision).
        case resolve
    }

    public let code: Code
    /// A sentence a user can act on. Never holds a password.
    public let message: String
    /// The lower-level cause, for logs (an errno text, an HTTP status line).
    public let underlying: String?

    public init(_ code: Code, _ message: String, underlying: String? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public var disposition: Disposition {
        switch code {
        case .notAuthenticated, .serverUnreachable, .insufficientQuota, .localDiskFull, .massDeletePaused, .serverNotTrusted:
            .parkDomain
        case .locked, .syncAnchorExpired, .pageExpired, .cancelled:
            .retry
        case .versionMismatch, .filenameCollision, .deletionRejected, .parentMissing,
             .noSuchItem, .directoryNotEmpty:
            .resolve
        case .cannotSynchronize, .excludedFromSync, .versionNoLongerAvailable, .permissionDenied, .serverFailedItem:
            .skipItem
        }
    }

    public var description: String {
        if let underlying { return "\(code.rawValue): \(message) (\(underlying))" }
        return "\(code.rawValue): \(message)"
    }
}
