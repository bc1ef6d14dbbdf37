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
    /// half its body and holds the rest (a second at most) while `scratch` is looked at on
    /// another connection, for about 250 ms (each moment of a probe is one more in which a
    /// `kill -9` leaves its scratch file on the server: a fresh-clone run caught that). Conditional headers cannot guard such a server's
    /// writes whole: an upload cut short (a network drop, a file changed while it was sent)
    /// leaves a truncated file that other clients download as the new version. Only a size
    /// that changes says "in place": a busy server that has not begun the PUT yet, or one
    /// whose size cannot be read, is taken for an atomic one, as every server was before
    /// this probe.
    func writesInPlace(_ scratch: RemotePath) async throws(ProviderError) -> Bool {
        let before = try await probePut(scratch, body: ByteBuffer(string: "tidesync")).status
        guard (200..<300).contains(before.code) else {
            if before.code == 401 { throw before.providerError("PUT", scratch) }
            logger.info("could not check whether the server's PUT is atomic (an 8-byte PUT was answered \(before.code)); taking it for atomic")
            return false
        }
        guard let baseline = try? await uploadedEntry(at: scratch).size else { return false }
        let half = ByteBuffer(repeating: UInt8(ascii: "x"), count: 64 << 10)
        let gate = HeldBody.Gate()
        var put = connection.request("PUT", path: paths.requestPath(scratch))
        put.body = .stream(HeldBody(half: half, gate: gate), length: .known(Int64(2 * half.readableBytes)))
        let connection = connection
        let upload = Task { () async -> Result<CollectedResponse, ProviderError> in
            do throws(ProviderError) { return .success(try await connection.send(put)) } catch { return .failure(error) }
        }
        // The rest of the body goes after a second whatever the looks do: a server that
        // answers one request at a time would hold a look behind the PUT.
        let release = Task {
            try? await Task.sleep(for: .seconds(1))
            gate.open()
        }
        var seen: Int64? = baseline
        let clock = ContinuousClock(), start = clock.now
        while seen == baseline, clock.now - start < .milliseconds(250) {
            try? await Task.sleep(for: .milliseconds(25))
            seen = try? await uploadedEntry(at: scratch).size
        }
        gate.open()
        release.cancel()
        if case .failure(let error) = await upload.value {
            logger.info("the PUT that checks whether the server's PUT is atomic failed (\(error.message)); judging from what was seen")
        }
        // A look answered only after the PUT ended sees the whole body: not "in place".
        guard let seen, seen != baseline, seen < Int64(2 * half.readableBytes) else { return false }
        return true
    }
}

/// A PUT body of two equal halves, the second held until `gate` opens. Each iteration
/// starts over (a request sent again on a new connection sends its whole body again); once
/// open, the gate lets every later iteration through at once.
struct HeldBody: AsyncSequence, Sendable {
    final class Gate: Sendable {
        private let state = Mutex<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

        func open() {
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
