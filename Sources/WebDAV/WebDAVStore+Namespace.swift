import AsyncHTTPClient
import Foundation
import NIOHTTP1
import SyncEngine

extension WebDAVStore {
    public func move(_ source: RemotePath, to destination: RemotePath,
                     version: ETag?) async throws(ProviderError) -> RemoteEntry {
        let mode = try await writeGuard()
        if destinationIsCut(destination) { return try await moveByCopy(source, to: destination, version: version) }
        if let version, mode == .locks {
            // The server ignores If-Match, and a lock would not cover the destination:
            // check just before (see `WriteGuard.locks`). `Overwrite: F` it does honour.
            try await requireVersion(source, version, outsideLock: true)
        }
        let condition = version.map(WriteCondition.mustMatch)
        try await guarded("MOVE", source, condition: condition, destination: destination) { () throws(ProviderError) in
            let status = try await sendMove(source, to: destination, condition: condition, isFolder: false)
            guard try await needsFolderURL(source, after: status) else { return status }
            return try await sendMove(source, to: destination, condition: condition, isFolder: true)
        }
        return try await entry(at: destination)
    }

    func sendMove(_ source: RemotePath, to destination: RemotePath, condition: WriteCondition?,
                  isFolder: Bool) async throws(ProviderError) -> HTTPResponseStatus {
        let request = connection.request("MOVE", path: paths.requestPath(source, isFolder: isFolder), headers:
            [("Destination", try destinationURL(destination, isFolder: isFolder)), ("Overwrite", "F")] + (condition?.headers ?? []))
        return try await connection.send(request).status
    }

    /// True when `status` refused a MOVE or DELETE of `path` sent without a trailing slash
    /// and `path` is a folder: nginx answers 400 or 409 there, lighttpd redirects (301,
    /// 308). Then the request is sent again with folder URLs. Apache and rclone take both.
    func needsFolderURL(_ path: RemotePath, after status: HTTPResponseStatus) async throws(ProviderError) -> Bool {
        guard [301, 308, 400, 409].contains(status.code) else { return false }
        do { return try await entry(at: path).kind == .folder } catch where error.code == .noSuchItem { return false }
    }

    /// `COPY` with `Depth: infinity` and `Overwrite: F` (RFC 4918 §9.8): the server copies a
    /// folder's whole tree. False when the server does not copy (405, 501), after which no
    /// COPY is sent again. A folder refused without a trailing slash (nginx: 400, lighttpd:
    /// a redirect) is sent again with folder URLs, as for MOVE. lighttpd answers a copy
    /// made with 200, and one refused with a 207 naming what failed (409 for a taken name).
    public func copy(_ source: RemotePath, to destination: RemotePath) async throws(ProviderError) -> Bool {
        _ = try await writeGuard()
        guard copies.withLock({ $0 }) else { return false }
        func send(isFolder: Bool) async throws(ProviderError) -> HTTPResponseStatus {
            let request = connection.request("COPY", path: paths.requestPath(source, isFolder: isFolder), headers:
                [("Destination", try destinationURL(destination, isFolder: isFolder)), ("Overwrite", "F"), ("Depth", "infinity")])
            return try await connection.send(request).status
        }
        var status = try await send(isFolder: false)
        if try await needsFolderURL(source, after: status) { status = try await send(isFolder: true) }
        switch status.code {
        case 200, 201, 204:
            return true
        case 207 where try await exists(destination):
            throw ProviderError(.filenameCollision, "\(destination) already exists on the server, or the server copied only part of \(source)",
                                underlying: "HTTP 207 on COPY")
        case 405, 501:
            copies.withLock { $0 = false }
            logger.info("the server does not copy (COPY answered \(status.code)); bundles are uploaded whole")
            return false
        case 412:
            throw ProviderError(.filenameCollision, "\(destination) already exists on the server")
        default:
            throw status.providerError("COPY", source)
        }
    }

    public func delete(_ path: RemotePath, version: ETag?) async throws(ProviderError) {
        guard !path.isRoot else { throw ProviderError(.cannotSynchronize, "refusing to delete the server folder itself") }
        let mode = try await writeGuard()
        if let version, mode == .locks {
            try await withVersionLock(path, version: version) { (token: String) throws(ProviderError) in
                let status = try await connection.send(connection.request("DELETE", path: paths.requestPath(path),
                                                                          headers: [("If", Self.ifHeader(token: token))])).status
                guard (200..<300).contains(status.code) else { throw status.providerError("DELETE", path) }
            }
            return
        }
        let headers = version.map { WriteCondition.mustMatch($0).headers } ?? []
        try await guarded("DELETE", path, condition: version.map(WriteCondition.mustMatch)) { () throws(ProviderError) in
            let status = try await connection.send(connection.request("DELETE", path: paths.requestPath(path), headers: headers)).status
            guard try await needsFolderURL(path, after: status) else { return status }
            return try await connection.send(connection.request("DELETE", path: paths.requestPath(path, isFolder: true), headers: headers)).status
        }
    }

    /// Runs a conditional request and turns its status into a result. A 412 is checked
    /// against a fresh PROPFIND: a really different (or missing) version is a mismatch,
    /// a taken destination a collision; an unchanged version (Apache's weak-ETag
    /// second) is retried after a delay.
    func guarded(_ method: String, _ path: RemotePath, condition: WriteCondition?, destination: RemotePath? = nil,
                 send: () async throws(ProviderError) -> HTTPResponseStatus) async throws(ProviderError) {
        var lockedWaits = 0
        for attempt in 0...Self.weakETagRetries {
            var status = try await send()
            // Another client's write under way holds a lock on the item (423) or on an item
            // inside the folder (424): it lasts one write, so it is waited for a few seconds.
            while status.code == 423 || status.code == 424, try await Self.waitOutLock(&lockedWaits, method) {
                status = try await send()
            }
            switch status.code {
            case 200..<300: return
            case 423, 424:
                throw ProviderError(.locked, "\(path) (or something in it) is locked on the server by another client's write; will retry",
                                    underlying: "HTTP \(status.code)")
            case 412:
                try await explainPreconditionFailure(method, path, condition: condition, destination: destination)
                guard attempt < Self.weakETagRetries else { break }
                logger.debug("412 on an unchanged version (weak ETag); retrying", metadata: ["path": "\(path)"])
                do { try await Task.sleep(for: Self.weakETagDelay) } catch {
                    throw ProviderError(.cancelled, "\(method) was cancelled")
                }
            case 403, 404, 409, 500:
                guard method == "MOVE" || method == "PUT" else { throw status.providerError(method, path) }
                // Apache answers a MOVE into a missing folder with 500, not 409; rclone a MOVE
                // of a missing item or into a missing folder with 403 (not "wrong password"),
                // a PUT into a missing folder with 404 (not "no such item").
                if method == "MOVE", status.code == 403 || status.code == 404, try await !exists(path) {
                    throw ProviderError(.noSuchItem, "\(path) does not exist on the server", underlying: "HTTP \(status.code)")
                }
                let target = destination ?? path
                if try await !exists(target.parent) {
                    throw ProviderError(.parentMissing, "the folder \(target.parent) does not exist on the server", underlying: "HTTP \(status.code)")
                }
                throw status.providerError(method, path)
            default:
                throw status.providerError(method, path)
            }
        }
        // Not a conflict: the version is provably unchanged. Skip the item with backoff.
        throw ProviderError(.cannotSynchronize, "the server kept refusing \(method) \(path) although its version did not change; will retry later",
                            underlying: "HTTP 412")
    }

    /// Throws the real reason of a 412, or returns when the version is unchanged.
    func explainPreconditionFailure(_ method: String, _ path: RemotePath, condition: WriteCondition?,
                                    destination: RemotePath?) async throws(ProviderError) {
        let current: RemoteEntry?
        do { current = try await entry(at: path) } catch where error.code == .noSuchItem { current = nil }
        switch condition {
        case .mustNotExist?:
            throw ProviderError(.filenameCollision, "\(path) already exists on the server")
        case .mustMatch(let version)?:
            guard let current else { throw ProviderError(.noSuchItem, "\(path) no longer exists on the server") }
            guard let etag = current.etag, etag.sameValue(as: version) else {
                throw ProviderError(.versionMismatch, "\(path) changed on the server since version \(version)")
            }
        case nil:
            guard current != nil else { throw ProviderError(.noSuchItem, "\(path) does not exist on the server") }
        }
        if let destination {
            let taken: Bool
            do {
                _ = try await entry(at: destination)
                taken = true
            } catch where error.code == .noSuchItem { taken = false }
            if taken { throw ProviderError(.filenameCollision, "\(destination) already exists on the server") }
        }
        if condition == nil {
            throw ProviderError(.cannotSynchronize, "the server refused \(method) \(path) with 412 for no visible reason")
        }
    }
}
