// The file commands of the control protocol (issue 15 item 7): `file-status`, `pin`,
// `unpin`, `evict`, `hydrate` name absolute paths in a domain; each answers one report per
// path, in order, a refusal being a report with `error`. A hydration (`hydrate`, or `pin` of
// placeholders) runs in the daemon as a numbered job the client follows with `progress`, so
// no request waits on a download.
import Foundation

/// What a file command found or did at one path.
public struct FileReport: Codable, Sendable, Equatable {
    /// The path as the request named it.
    public var path: String
    /// The domain it is in; nil when it is in none.
    public var domain: String?
    /// Why nothing was done at this path (a sentence saying what to do); nil when done.
    public var error: String?
    /// `file`, `folder`, `symlink` or `bundle`.
    public var kind: String?
    /// For a file: `dataless`, `partial` or `materialized`.
    public var state: String?
    /// For a file: its size and the bytes of it on disk.
    public var size: Int64?
    public var present: Int64?
    /// Always kept downloaded (its own pin, or its folder's).
    public var pinned: Bool?
    /// Changed here and not synced yet (or waiting for its turn in the running sync).
    public var pending: Bool?
    /// A conflict copy, or a file whose conflict copy is recorded.
    public var conflict: Bool?
    /// What the command did (e.g. "evicted"), for `pin`, `unpin`, `evict`, `hydrate`.
    public var done: String?

    public init(path: String, domain: String? = nil, error: String? = nil) {
        self.path = path
        self.domain = domain
        self.error = error
    }

    /// The percentage of the file on disk, rounded down (100 only when whole).
    public var percent: Int? {
        guard let size, let present else { return nil }
        guard size > 0, present < size else { return 100 }
        return Int(present * 100 / size)
    }
}

/// A hydration the daemon runs for `hydrate` or `pin`.
public struct HydrationJob: Codable, Sendable, Equatable {
    /// One file of the job.
    public struct File: Codable, Sendable, Equatable {
        public var path: String
        /// The bytes asked for, and how many of them are on disk.
        public var total: Int64
        public var done: Int64
        public var finished: Bool
        /// Why the file could not be hydrated.
        public var error: String?

        public init(path: String, total: Int64, done: Int64 = 0, finished: Bool = false, error: String? = nil) {
            self.path = path
            self.total = total
            self.done = done
            self.finished = finished
            self.error = error
        }
    }

    public var id: Int
    public var files: [File]

    public init(id: Int, files: [File]) {
        self.id = id
        self.files = files
    }

    public var finished: Bool { files.allSatisfy(\.finished) }
    public var total: Int64 { files.reduce(0) { $0 + $1.total } }
    public var done: Int64 { files.reduce(0) { $0 + $1.done } }
}

/// Checks of a file command's request before the daemon acts on it.
public enum FileCommandCheck {
    /// The most paths one request may name.
    public static let maximumPaths = 4096

    /// `request` when its paths and range are usable; else why not.
    public static func validated(_ request: ControlRequest) throws(ControlFailure) -> ControlRequest {
        guard let paths = request.paths, !paths.isEmpty else {
            throw ControlFailure(.badRequest, "the \(request.command.rawValue) request names no \"paths\"")
        }
        guard paths.count <= maximumPaths else {
            throw ControlFailure(.badRequest, "at most \(maximumPaths) paths at once; name their folder instead")
        }
        if let relative = paths.first(where: { !$0.hasPrefix("/") }) {
            throw ControlFailure(.badRequest, "\"\(relative.prefix(256))\" is not an absolute path")
        }
        if let offset = request.offset, offset < 0 {
            throw ControlFailure(.badRequest, "the range's offset \(offset) is negative")
        }
        if let length = request.length, length <= 0 {
            throw ControlFailure(.badRequest, "the range's length \(length) is not positive")
        }
        return request
    }
}
