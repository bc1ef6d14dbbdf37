import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SyncEngine
import Synchronization

// A PUT whose body is sent up to its last byte, knowing when that part left this process:
// the write-guard probe's decisive in-place check (`WebDAVStore.decisiveLook`). Through
// AsyncHTTPClient's delegate API, whose `didSendRequestPart` comes once a part's bytes are
// written to the socket; the async API's body iterator is asked for more at once while the
// client's event loop has not caught up, which on a busy machine says nothing.
extension WebDAVConnection {
    /// Sends a PUT to `path` declaring one byte more than `first`, and writes `first`;
    /// `gate.handedOverAt` is set once it is written to the socket. The PUT goes on a
    /// connection of its own: a kept-alive one may have a receive buffer grown by earlier
    /// traffic (Linux lets it grow to `tcp_rmem`'s largest, 32 MiB here) that could hold all
    /// of `first` while the server reads none of it. The last byte is never sent: when
    /// `gate` opens, the body fails and the exchange ends (writing it while the client's
    /// upload is paused, then failing, would leave a promise AsyncHTTPClient never
    /// completes). Returns the status of an answer that came before that (a refusal), else
    /// nil. `gate.answeredAt` is set when the exchange is over on the server's side.
    func heldPut(path: String, first: ByteBuffer, gate: HeldBody.Gate, deadline: Duration) async throws(ProviderError) -> HTTPResponseStatus? {
        defer { gate.noteAnswered() }
        let authorized = try await authorized(request("PUT", path: path))
        guard let url = URL(string: authorized.url) else { return nil }
        let client = try await separateClient()
        let delegate = HeldPutDelegate(gate: gate, firstLength: first.readableBytes)
        do {
            let body = HTTPClient.Body.stream(contentLength: Int64(first.readableBytes + 1)) { writer in
                let sent = writer.write(.byteBuffer(first))
                return sent.flatMap {
                    let ended = sent.eventLoop.makePromise(of: Void.self)
                    Task {
                        await gate.wait()
                        ended.fail(HeldPutEnded())
                    }
                    return ended.futureResult
                }
            }
            let request = try HTTPClient.Request(url: url, method: .PUT, headers: authorized.headers, body: body)
            let task = client.execute(request: request, delegate: delegate, deadline: .now() + WebDAVConnection.timeAmount(deadline))
            _ = try await task.futureResult.get()
        } catch {
            // Cut short by the gate, refused, or the connection failed: the status says which.
        }
        try? await client.shutdown()
        return delegate.status
    }
}

/// The error that ends a held PUT's body.
private struct HeldPutEnded: Error {}

/// Notes when the held PUT's first part was written to the socket, and an early answer.
private final class HeldPutDelegate: HTTPClientResponseDelegate {
    typealias Response = Void
    let gate: HeldBody.Gate
    let firstLength: Int
    private let answer = Mutex<HTTPResponseStatus?>(nil)

    var status: HTTPResponseStatus? { answer.withLock { $0 } }

    init(gate: HeldBody.Gate, firstLength: Int) {
        self.gate = gate
        self.firstLength = firstLength
    }

    func didSendRequestPart(task: HTTPClient.Task<Response>, _ part: IOData) {
        if part.readableBytes == firstLength { gate.noteHandedOver() }
    }

    func didReceiveHead(task: HTTPClient.Task<Response>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        answer.withLock { $0 = head.status }
        gate.noteAnswered()
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Response>) throws {}
}
