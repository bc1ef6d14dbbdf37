// The control socket's wire format, version 1.
//
// One request per line, one answer per line: UTF-8 JSON objects, each ended by "\n", on a
// Unix stream socket. A request is at most `ControlProtocol.maximumRequestBytes` bytes; a
// longer one is answered with `tooLarge` and the connection is closed. Every answer carries
// `version`; fields are only ever added, so a client ignores keys it does not know.

import Foundation

/// Constants of the control protocol.
public enum ControlProtocol {
    /// The protocol version this binary speaks; requests may name this version or an older one.
    public static let version = 1
    /// The longest request line accepted, newline included.
    public static let maximumRequestBytes = 64 << 10
    /// The longest answer line a client reads (a status of many domains with long paths).
    public static let maximumAnswerBytes = 64 << 20
}

/// What a client asks.
public struct ControlRequest: Codable, Sendable, Equatable {
    /// The commands of version 1.
    public enum Command: String, Codable, Sendable, CaseIterable {
        /// A `StatusReport`.
        case status
        /// A `ConflictList`.
        case conflicts
        /// Start no new transfer in `domain` (all when absent) until `resume`.
        case pause
        /// Undo `pause`.
        case resume
        /// Start a pass now instead of at the next poll; a parked domain retries now.
        case syncNow = "sync-now"
        /// Carry out, once, the deletions `domain` (or every domain) holds back now; the
        /// answer lists the domains that held some.
        case allowDeletions = "allow-deletions"
        /// A `FileReport` for each of `paths`: what the file holds, pinned, pending, conflict.
        case fileStatus = "file-status"
        /// Keep `paths` always downloaded (placeholders below are hydrated: the answer's `job`).
        case pin
        /// Let `paths` be evicted again.
        case unpin
        /// Punch the bytes of `paths` out, keeping dataless placeholders.
        case evict
        /// Fetch the missing bytes of `paths` (of `offset`, `length` when given): the answer's `job`.
        case hydrate
        /// How the hydration `job` goes.
        case progress
        /// Make freedesktop-cache thumbnails of the image placeholders at or below `paths`
        /// without downloading them: the answer's `job`.
        case thumbnails
    }

    /// The protocol version the client speaks.
    public var version: Int
    public var command: Command
    /// The domain the command is about; absent: every domain.
    public var domain: String?
    /// For `conflicts`: at most this many, newest first.
    public var limit: Int?
    /// For the file commands: absolute paths of files or folders in a domain.
    public var paths: [String]?
    /// For `hydrate`: the first byte of the range (default 0).
    public var offset: Int64?
    /// For `hydrate`: the range's length (default: to the end of each file).
    public var length: Int64?
    /// For `progress`: the job's number.
    public var job: Int?

    public init(_ command: Command, domain: String? = nil, limit: Int? = nil, version: Int = ControlProtocol.version) {
        self.version = version
        self.command = command
        self.domain = domain
        self.limit = limit
    }

    /// A file command on `paths`.
    public init(_ command: Command, paths: [String], offset: Int64? = nil, length: Int64? = nil) {
        self.init(command)
        self.paths = paths
        self.offset = offset
        self.length = length
    }
}

/// Why a request was not carried out.
public struct ControlFailure: Error, Codable, Sendable, Equatable {
    /// What kind of failure; scripts branch on this, people read `message`.
    public enum Code: String, Codable, Sendable {
        /// Not one JSON object of the expected shape.
        case badRequest
        /// Longer than `ControlProtocol.maximumRequestBytes`.
        case tooLarge
        /// A protocol version this daemon does not speak.
        case unsupportedVersion
        /// A command this daemon does not know.
        case unknownCommand
        /// No domain of that name.
        case unknownDomain
        /// The peer is another user.
        case refused
        /// Too many connections at once.
        case busy
        /// The daemon could not answer (e.g. its state DB could not be read).
        case failed
    }

    public var code: Code
    /// A sentence saying what went wrong and what to do.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

/// The daemon's answer to one request: `ok` with the field of the command, or `error`.
public struct ControlResponse: Codable, Sendable, Equatable {
    public var version: Int
    public var ok: Bool
    public var error: ControlFailure?
    /// The answer to `status`.
    public var status: StatusReport?
    /// The answer to `conflicts`.
    public var conflicts: ConflictList?
    /// The domains a `pause`, `resume`, `sync-now` or `allow-deletions` acted on.
    public var domains: [String]?
    /// The answer to a file command: one report per path, in order.
    public var files: [FileReport]?
    /// The hydration a `hydrate` or `pin` started, or the answer to `progress`.
    public var job: HydrationJob?

    public init(status: StatusReport? = nil, conflicts: ConflictList? = nil, domains: [String]? = nil,
                files: [FileReport]? = nil, job: HydrationJob? = nil) {
        version = ControlProtocol.version
        ok = true
        self.status = status
        self.conflicts = conflicts
        self.domains = domains
        self.files = files
        self.job = job
    }

    public init(failure: ControlFailure) {
        version = ControlProtocol.version
        ok = false
        error = failure
    }
}

/// JSON as the protocol writes it: ISO 8601 dates, sorted keys, one line.
public enum ControlJSON {
    public static func encoder(pretty: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
            : [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    /// `value` as one line of JSON, ended by "\n".
    public static func line(_ value: some Encodable) -> Data {
        var data = (try? encoder().encode(value)) ?? Data(#"{"version":1,"ok":false}"#.utf8)
        data.append(0x0A)
        return data
    }
}
