import Foundation

/// What the control server asks of the daemon: the server's port, implemented by the
/// daemon's composition root. Called from the server's connection threads, possibly several
/// at once; each call returns promptly (reads, flags and triggers; no waiting on transfers).
public protocol ControlResponder: Sendable {
    /// The status of `domain`, or of every domain when nil.
    func status(domain: String?) throws(ControlFailure) -> StatusReport
    /// The `limit` newest conflicts of `domain`, or of every domain when nil.
    func conflicts(domain: String?, limit: Int) throws(ControlFailure) -> ConflictList
    /// Pauses (or resumes) `domain`, or every domain when nil; returns the domains affected.
    func setPaused(_ paused: Bool, domain: String?) throws(ControlFailure) -> [String]
    /// Starts a pass of `domain` (or of every domain) now; returns the domains affected.
    func syncNow(domain: String?) throws(ControlFailure) -> [String]
    /// Releases, once, the deletions `domain` (or every domain) holds back now and starts a
    /// pass; returns the domains that held deletions.
    func allowDeletions(domain: String?) throws(ControlFailure) -> [String]
    /// Carries out the file command `request` (`file-status`, `pin`, `unpin`, `evict`,
    /// `hydrate`) on its paths: a report per path, and the hydration it started, if any.
    func files(_ request: ControlRequest) throws(ControlFailure) -> (reports: [FileReport], job: HydrationJob?)
    /// How the hydration job `id` goes.
    func progress(job id: Int) throws(ControlFailure) -> HydrationJob
}

/// Turns request lines into answer lines: the whole protocol, with no socket in it.
public enum ControlDispatch {
    /// The answer to one request line (without its newline).
    public static func answer(_ line: Data, responder: any ControlResponder) -> ControlResponse {
        let request: ControlRequest
        switch parse(line) {
        case .success(let parsed): request = parsed
        case .failure(let failure): return ControlResponse(failure: failure)
        }
        do throws(ControlFailure) {
            switch request.command {
            case .status:
                return ControlResponse(status: try responder.status(domain: request.domain))
            case .conflicts:
                return ControlResponse(conflicts: try responder.conflicts(domain: request.domain,
                                                                          limit: max(0, request.limit ?? 100)))
            case .pause, .resume:
                return ControlResponse(domains: try responder.setPaused(request.command == .pause, domain: request.domain))
            case .syncNow:
                return ControlResponse(domains: try responder.syncNow(domain: request.domain))
            case .allowDeletions:
                return ControlResponse(domains: try responder.allowDeletions(domain: request.domain))
            case .fileStatus, .pin, .unpin, .evict, .hydrate, .thumbnails:
                let answer = try responder.files(FileCommandCheck.validated(request))
                return ControlResponse(files: answer.reports, job: answer.job)
            case .progress:
                guard let job = request.job else { throw ControlFailure(.badRequest, "the progress request has no \"job\"") }
                return ControlResponse(job: try responder.progress(job: job))
            }
        } catch {
            return ControlResponse(failure: error)
        }
    }

    /// The request in `line`, or why it is not one.
    static func parse(_ line: Data) -> Result<ControlRequest, ControlFailure> {
        struct Envelope: Decodable {
            var version: Int?
            var command: String?
        }
        guard let envelope = try? JSONDecoder().decode(Envelope.self, from: line) else {
            return .failure(ControlFailure(.badRequest,
                                           "the request is not a JSON object on one line; send e.g. {\"version\":1,\"command\":\"status\"}"))
        }
        guard let version = envelope.version, version >= 1 else {
            return .failure(ControlFailure(.badRequest, "the request has no \"version\" (a positive integer); send \"version\":1"))
        }
        guard version <= ControlProtocol.version else {
            return .failure(ControlFailure(.unsupportedVersion,
                                           "this daemon speaks control protocol version \(ControlProtocol.version), not \(version); upgrade the daemon (and restart it)"))
        }
        guard let command = envelope.command else {
            return .failure(ControlFailure(.badRequest, "the request has no \"command\""))
        }
        guard ControlRequest.Command(rawValue: command) != nil else {
            let known = ControlRequest.Command.allCases.map(\.rawValue).joined(separator: ", ")
            return .failure(ControlFailure(.unknownCommand, "unknown command \"\(command.prefix(64))\"; known: \(known)"))
        }
        do {
            return .success(try JSONDecoder().decode(ControlRequest.self, from: line))
        } catch {
            return .failure(ControlFailure(.badRequest, "the \(command) request has a field of the wrong type: \(error)"))
        }
    }
}
