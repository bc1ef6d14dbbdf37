import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SyncEngine
import Synchronization

// Whether a server's PUT is atomic: part of the write-guard probe (`probe()`).
extension WebDAVStore {
    /// Whether the server writes a PUT's body into the file itself as it arrives (WsgiDAV,
    /// golang.org/x/net/webdav) instead of a temporary it renames when the body is complete
    /// (Apache, nginx, lighttpd). Conditional headers cannot guard such a server's writes
    /// whole: an upload cut short (a network drop, a file changed while it was sent) leaves
    /// a truncated file that other clients download as the new version.
    ///
    /// `scratch` is given 8 bytes, then a PUT of 128 KiB sends half its body and holds the
    /// rest while `scratch` is looked at on another connection (`heldPutLook`): a size that
    /// changes proves "in place", quickly, on an idle machine. A size that did not change
    /// proves nothing, however quickly the server answered: the server may not have read
    /// the half yet (under load, WsgiDAV taken for atomic that way left the remains of a cut
    /// upload on the server as a new version, and a conflict copy of the user's edit beside
    /// it). Only `decisiveLook`, which knows the server has read most of a body, proves
    /// "atomic". A server still undecided after that is taken for one that writes in place,
    /// the safe side, unless it names itself Apache (`server`, its `Server` header): Apache's
    /// PUT is atomic, and its lock database breaks under the LOCKs the other way would send.
    /// A proven verdict is kept in `putVerdicts` and used again at later starts (see there):
    /// "in place" as it is, "atomic" after the quick check, which can still prove the opposite.
    func writesInPlace(_ scratch: RemotePath, server: String) async throws(ProviderError) -> Bool {
        let origin = connection.endpoint.baseURL.absoluteString
        let kept = putVerdicts?.recall(origin: origin, server: server)
        if kept == true {
            logger.info("the server's PUT was proven to write into the file as it arrives at an earlier start\(server)")
            return true
        }
        let before = try await probePut(scratch, body: ByteBuffer(string: "tidesync")).status
        guard (200..<300).contains(before.code) else {
            if before.code == 401 { throw before.providerError("PUT", scratch) }
            logger.info("could not check whether the server's PUT is atomic (an 8-byte PUT was answered \(before.code)); taking it for atomic")
            return false
        }
        guard let uploaded = try? await uploadedEntry(at: scratch).size else { return false }
        let changed = await heldPutLook(scratch, baseline: uploaded, window: Self.inPlaceWindow)
        // Kept "atomic" (the same URL and Server header, but rclone and other servers send no
        // Server header, and a proxy sends its own): the quick check above still runs, so a
        // server swapped behind the URL for one that writes in place is seen on an idle machine.
        if !changed, kept == false {
            logger.info("the server's PUT was proven atomic at an earlier start\(server); not proven again for a week, or until its Server header changes")
            return false
        }
        let proven = changed ? true : await decisiveLook(scratch, baseline: baseline(of: scratch))
        if let proven {
            if let putVerdicts, !putVerdicts.remember(proven, origin: origin, server: server) {
                logger.info("could not keep what the probe proved in \(putVerdicts.path); the next start checks again")
            }
            return proven
        }
        // A probe cancelled meanwhile decides nothing: its verdict would be kept.
        if Task.isCancelled { throw ProviderError(.cancelled, "the write-guard probe was cancelled") }
        if Self.namesApache(server) {
            logger.notice("could not tell whether the server writes a PUT in place; taking it for atomic, as Apache's is\(server)")
            return false
        }
        logger.notice("could not tell whether the server writes a PUT in place; taking it for one that does, the safe side")
        return true
    }

    /// True when a `Server` header (as the probe formats it: " (…)") names Apache httpd
    /// by its product token ("Apache" or "Apache/…"; not Tomcat's "Apache-Coyote").
    static func namesApache(_ server: String) -> Bool {
        let header = server.trimmingCharacters(in: CharacterSet(charactersIn: " ()"))
        let product = header.prefix { $0 != "/" && $0 != " " }
        return product.lowercased() == "apache"
    }

    /// The size the decisive check's looks compare with, looked at as they look.
    private func baseline(of scratch: RemotePath) async -> Int64? {
        try? await entry(at: scratch).size
    }

    /// The check that does not depend on how fast the server is: a PUT whose first part
    /// (`decisivePart`: more than the socket's send buffer and the window of a receiver that
    /// reads nothing hold) is written to the socket whole before its last byte is held back.
    /// By then the server has read most of that part, and one that writes in place has
    /// written it into the file: looks that begin after that (`listingLag` after) and still
    /// see the baseline size prove an atomic PUT. True (in place), false (atomic), or nil when nothing was
    /// proven within `decisiveCap` (the PUT refused, a slow uplink, a server that answers
    /// one request at a time, a machine too busy). Behind a proxy that reads whole request
    /// bodies before passing them on (nginx's default) a server is judged atomic: an upload
    /// cut short never reaches it there.
    func decisiveLook(_ scratch: RemotePath, baseline: Int64?) async -> Bool? {
        guard let baseline else { return nil }
        let first = ByteBuffer(repeating: UInt8(ascii: "x"), count: Self.decisivePart)
        let total = Int64(first.readableBytes + 1)
        let gate = HeldBody.Gate()
        let (connection, path) = (connection, paths.requestPath(scratch))
        let upload = Task { () async -> HTTPResponseStatus? in
            defer { gate.noteAnswered() }  // also when it could not begin (no client, no password)
            return try? await connection.heldPut(path: path, first: first, gate: gate, deadline: Self.decisiveCap + .seconds(30))
        }
        let release = Task {
            try? await Task.sleep(for: Self.decisiveCap)
            gate.open()
        }
        var verdict: Bool?
        // Until a verdict, the cap, or the end of the exchange (a refusal, a failure).
        // Looked at by PROPFIND: rclone answers a HEAD with the size from before the PUT for
        // a moment after it began. "Atomic" only from looks a second after the handover, so
        // a listing that lags that much still shows the file growing.
        while verdict == nil, gate.openedAt == nil, gate.answeredAt == nil, !Task.isCancelled {
            let began = ContinuousClock.now
            let settled = gate.handedOverAt.map { began - $0 >= Self.listingLag } ?? false
            if let seen = try? await entry(at: scratch).size {
                if seen != baseline, seen < total { verdict = true } else if settled, seen == baseline { verdict = false }
            }
            if verdict == nil { try? await Task.sleep(for: .milliseconds(25)) }
        }
        // The PUT never gets its last byte: it ends here, cut short (a server that writes in
        // place leaves the scratch file truncated; the probe deletes it).
        gate.open()
        release.cancel()
        if let status = await upload.value, !(200..<300).contains(status.code) {
            logger.info("the large PUT that checks whether the server's PUT is atomic was answered \(status.code); judging from what was seen")
        }
        return verdict
    }

    /// The decisive check's first part (Linux's largest automatic send buffer is 4 MiB; a
    /// receiver that reads nothing keeps its window small) and how long it waits at most.
    static let decisivePart = 8 << 20
    static let decisiveCap = Duration.seconds(30)
    static let listingLag = Duration.seconds(1)

    /// How long the looks at the scratch file last (short: each moment of a probe is one
    /// more in which a `kill -9` leaves its scratch file on the server).
    static let inPlaceWindow = Duration.milliseconds(250)

    /// A PUT of 128 KiB over `scratch` whose second half is held while the file is looked at
    /// for `window` (and at most `window` plus a second whatever the looks do: a server that
    /// answers one request at a time would hold a look behind the PUT). True when a look saw
    /// a size other than `baseline` and short of the whole body: the server writes in place.
    func heldPutLook(_ scratch: RemotePath, baseline: Int64, window: Duration) async -> Bool {
        let half = ByteBuffer(repeating: UInt8(ascii: "x"), count: 64 << 10)
        let gate = HeldBody.Gate()
        var put = connection.request("PUT", path: paths.requestPath(scratch))
        put.body = .stream(HeldBody(half: half, gate: gate), length: .known(Int64(2 * half.readableBytes)))
        let connection = connection
        let upload = Task { () async -> Result<CollectedResponse, ProviderError> in
            do throws(ProviderError) { return .success(try await connection.send(put)) } catch { return .failure(error) }
        }
        let release = Task {
            try? await Task.sleep(for: window + .seconds(1))
            gate.open()
        }
        var seen: Int64? = baseline
        let clock = ContinuousClock(), start = clock.now
        while seen == baseline, clock.now - start < window {
            try? await Task.sleep(for: .milliseconds(25))
            seen = try? await uploadedEntry(at: scratch).size
        }
        gate.open()
        release.cancel()
        if case .failure(let error) = await upload.value {
            logger.info("the PUT that checks whether the server's PUT is atomic failed (\(error.message)); judging from what was seen")
        }
        // A look answered only after the PUT ended sees the whole body: not "in place".
        guard let seen, seen != baseline else { return false }
        return seen < Int64(2 * half.readableBytes)
    }
}

/// A PUT body of two equal halves, the second held until `gate` opens. Each iteration
/// starts over (a request sent again on a new connection sends its whole body again); once
/// open, the gate lets every later iteration through at once. The gate also notes, for
/// `WebDAVConnection.heldPut`, when a first part left this process and when it was answered.
struct HeldBody: AsyncSequence, Sendable {
    final class Gate: Sendable {
        private let state = Mutex<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))
        private let opened = Mutex<ContinuousClock.Instant?>(nil)
        private let handedOver = Mutex<ContinuousClock.Instant?>(nil)

        /// When the gate first opened.
        var openedAt: ContinuousClock.Instant? { opened.withLock { $0 } }

        private let answered = Mutex<ContinuousClock.Instant?>(nil)

        /// When the first part was written to the socket (`WebDAVConnection.heldPut`).
        var handedOverAt: ContinuousClock.Instant? { handedOver.withLock { $0 } }

        /// When the server's answer began, or the exchange failed (`WebDAVConnection.heldPut`).
        var answeredAt: ContinuousClock.Instant? { answered.withLock { $0 } }

        func noteHandedOver() {
            handedOver.withLock { $0 = $0 ?? ContinuousClock.now }
        }

        func noteAnswered() {
            answered.withLock { $0 = $0 ?? ContinuousClock.now }
        }

        func open() {
            opened.withLock { $0 = $0 ?? ContinuousClock.now }
            let waiting = state.withLock { state in
                state.open = true
                defer { state.waiting = [] }
                return state.waiting
            }
            for waiter in waiting { waiter.resume() }
        }

        func wait() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state in
                    if !state.open { state.waiting.append(continuation) }
                    return state.open
                }
                if ready { continuation.resume() }
            }
        }
    }

    let half: ByteBuffer
    let gate: Gate

    struct AsyncIterator: AsyncIteratorProtocol {
        let body: HeldBody
        var sent = 0

        mutating func next() async -> ByteBuffer? {
            sent += 1
            switch sent {
            case 1: return body.half
            case 2:
                await body.gate.wait()
                return body.half
            default: return nil
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(body: self) }
}
