import AsyncHTTPClient
import Foundation
import NIOCore
import SyncEngine
import Synchronization

// Whether a server's PUT is atomic: part of the write-guard probe (`probe()`).
extension WebDAVStore {
    /// Whether the server writes a PUT's body into the file itself as it arrives (WsgiDAV,
    /// golang.org/x/net/webdav) instead of a temporary it renames when the body is complete
    /// (Apache, nginx, lighttpd): `scratch` is given 8 bytes, then a PUT of 128 KiB sends
    /// half its body and holds the rest while `scratch` is looked at on another connection
    /// (`heldPutLook`). Conditional headers cannot guard such a server's writes whole: an
    /// upload cut short (a network drop, a file changed while it was sent) leaves a
    /// truncated file that other clients download as the new version. Only a size that
    /// changes says "in place"; a size that did not change is evidence only when the server
    /// was quick: when it answered the PUT long after the rest of the body went (a busy
    /// machine, a server that had not begun the PUT when the looks ended), the check runs
    /// again with a longer window, and when that is slow too, `decisiveLook` decides. A
    /// server still undecided after that is taken for one that writes in place: the safe
    /// side (once, under load, WsgiDAV taken for atomic left the remains of a cut upload on
    /// the server as a new version, and a conflict copy of the user's edit beside it).
    func writesInPlace(_ scratch: RemotePath) async throws(ProviderError) -> Bool {
        let clock = ContinuousClock(), sent = clock.now
        let before = try await probePut(scratch, body: ByteBuffer(string: "tidesync")).status
        // What "quick" means here: the fixed allowance plus two round trips of a small PUT
        // (a distant server or a slow link is not a slow server).
        let quick = Self.quickAnswer + (clock.now - sent) * 2
        guard (200..<300).contains(before.code) else {
            if before.code == 401 { throw before.providerError("PUT", scratch) }
            logger.info("could not check whether the server's PUT is atomic (an 8-byte PUT was answered \(before.code)); taking it for atomic")
            return false
        }
        for window in Self.inPlaceWindows {
            guard let baseline = try? await uploadedEntry(at: scratch).size else { return false }
            let look = await heldPutLook(scratch, baseline: baseline, window: window)
            if look.changed { return true }
            if look.answerDelay <= quick { return false }
            logger.info("the server answered the PUT that checks whether its PUT is atomic \(look.answerDelay) after its body ended; looking again for longer")
        }
        logger.info("the server was slow to answer each check of whether its PUT is atomic; checking with a PUT larger than the connection can hold")
        if let inPlace = await decisiveLook(scratch, baseline: baseline(of: scratch)) { return inPlace }
        logger.notice("could not tell whether the server writes a PUT in place (it was slow to answer each check); taking it for one that does, the safe side")
        return true
    }

    private func baseline(of scratch: RemotePath) async -> Int64? {
        try? await uploadedEntry(at: scratch).size
    }

    /// The check that does not depend on how fast the server is: a PUT whose first part
    /// (`decisivePart`, more than the socket buffers of both ends hold) is handed over
    /// whole before its last byte is held back. The body iterator asks for that byte only
    /// once nearly all of the first part is in the kernel, so the server has read most of it, and
    /// one that writes in place has written it into the file: a look that begins after
    /// that and still sees the baseline size proves an atomic PUT. True (in place), false
    /// (atomic), or nil when nothing was proven within `decisiveCap` (the PUT refused, a
    /// server that answers one request at a time, a machine too busy).
    func decisiveLook(_ scratch: RemotePath, baseline: Int64?) async -> Bool? {
        guard let baseline else { return nil }
        // In pieces: the HTTP client asks for the next piece at once while its connection
        // takes more, and only once the connection has handed what it holds to the kernel
        // otherwise, so only the last pieces' request says "handed over".
        let piece = ByteBuffer(repeating: UInt8(ascii: "x"), count: 256 << 10)
        let repeats = Self.decisivePart / piece.readableBytes
        let total = Int64(repeats * piece.readableBytes + 1)
        let gate = HeldBody.Gate()
        var put = connection.request("PUT", path: paths.requestPath(scratch))
        put.body = .stream(HeldBody(first: piece, repeats: repeats, rest: ByteBuffer(string: "x"), gate: gate), length: .known(total))
        let connection = connection
        let answered = Mutex(false)
        let upload = Task { () async -> Result<CollectedResponse, ProviderError> in
            defer { answered.withLock { $0 = true } }
            do throws(ProviderError) { return .success(try await connection.send(put)) } catch { return .failure(error) }
        }
        let release = Task {
            try? await Task.sleep(for: Self.decisiveCap)
            gate.open()
        }
        var verdict: Bool?
        // Until a verdict, the cap, or an answer before the held byte went (a PUT refused).
        while verdict == nil, gate.openedAt == nil, !answered.withLock({ $0 }) {
            let began = ContinuousClock.now
            let handedOver = gate.restRequestedAt.map { $0 <= began } ?? false
            if let seen = try? await uploadedEntry(at: scratch).size {
                if seen != baseline, seen < total { verdict = true } else if handedOver, seen == baseline { verdict = false }
            }
            if verdict == nil { try? await Task.sleep(for: .milliseconds(25)) }
        }
        gate.open()
        release.cancel()
        if case .failure(let error) = await upload.value {
            logger.info("the large PUT that checks whether the server's PUT is atomic failed (\(error.message)); judging from what was seen")
        }
        return verdict
    }

    /// The decisive check's first part (Linux's largest automatic socket buffers are 4 MiB
    /// to send and 6 MiB to receive) and how long it waits at most.
    static let decisivePart = 16 << 20
    static let decisiveCap = Duration.seconds(30)

    /// How long the looks at the scratch file last, first and second time (the first is
    /// short: each moment of a probe is one more in which a `kill -9` leaves its scratch file
    /// on the server), and how soon after its body ends a PUT must be answered for "nothing
    /// changed" to count (besides two round trips of a small PUT).
    static let inPlaceWindows: [Duration] = [.milliseconds(250), .seconds(2)]
    static let quickAnswer = Duration.milliseconds(150)

    /// A PUT of 128 KiB over `scratch` whose second half is held while the file is looked at
    /// for `window` (and at most `window` plus a second whatever the looks do: a server that
    /// answers one request at a time would hold a look behind the PUT). `changed` when a look
    /// saw a size other than `baseline` and short of the whole body; `answerDelay` is how
    /// long the PUT's answer came after the rest of its body was let go.
    func heldPutLook(_ scratch: RemotePath, baseline: Int64, window: Duration) async -> (changed: Bool, answerDelay: Duration) {
        let half = ByteBuffer(repeating: UInt8(ascii: "x"), count: 64 << 10)
        let gate = HeldBody.Gate()
        var put = connection.request("PUT", path: paths.requestPath(scratch))
        put.body = .stream(HeldBody(first: half, rest: half, gate: gate), length: .known(Int64(2 * half.readableBytes)))
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
        // From when the rest of the body was let go: by the looks' end, or earlier by the
        // release (a server that answers one request at a time held a look behind the PUT).
        let answerDelay = clock.now - (gate.openedAt ?? clock.now)
        // A look answered only after the PUT ended sees the whole body: not "in place".
        guard let seen, seen != baseline, seen < Int64(2 * half.readableBytes) else { return (false, answerDelay) }
        return (true, answerDelay)
    }
}

/// A PUT body of two parts, the second held until `gate` opens. Each iteration starts over
/// (a request sent again on a new connection sends its whole body again); once open, the
/// gate lets every later iteration through at once.
struct HeldBody: AsyncSequence, Sendable {
    final class Gate: Sendable {
        private let state = Mutex<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))
        private let opened = Mutex<ContinuousClock.Instant?>(nil)
        private let requested = Mutex<ContinuousClock.Instant?>(nil)

        /// When the gate first opened.
        var openedAt: ContinuousClock.Instant? { opened.withLock { $0 } }

        /// When the body first asked for its held part: the first part was handed over.
        var restRequestedAt: ContinuousClock.Instant? { requested.withLock { $0 } }

        func noteRestRequested() {
            requested.withLock { $0 = $0 ?? ContinuousClock.now }
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

    let first: ByteBuffer
    /// How many times `first` is sent before `rest` is held, and the pause between two.
    var repeats = 1
    var pace = Duration.milliseconds(2)
    let rest: ByteBuffer
    let gate: Gate

    struct AsyncIterator: AsyncIteratorProtocol {
        let body: HeldBody
        var sent = 0

        mutating func next() async -> ByteBuffer? {
            sent += 1
            switch sent {
            case 1: return body.first
            case _ where sent <= body.repeats:
                // A pause between pieces lets the client's connection say it holds enough
                // (its backpressure) before the next piece is asked for.
                try? await Task.sleep(for: body.pace)
                return body.first
            case body.repeats + 1:
                body.gate.noteRestRequested()
                await body.gate.wait()
                return body.rest
            default: return nil
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(body: self) }
}
