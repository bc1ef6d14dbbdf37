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
    /// `gate.handedOverAt` is set once it is written to the socket. The last byte is never
    /// sent: when `gate` opens, the body fails and the exchange ends (writing it while the
    /// client's upload is paused, then failing, would leave a promise AsyncHTTPClient never
    /// completes). Returns the status of an answer that came before that (a refusal), else
    /// nil. A request on a kept-alive connection the server had just closed is sent once
    /// more. `gate.answeredAt` is set when the exchange is over on the server's side.
    func heldPut(path: String, first: ByteBuffer, gate: HeldBody.Gate, deadline: Duration) async throws(ProviderError) -> HTTPResponseStatus? {
        let authorized = try await authorized(request("PUT", path: path))
        let client = try await client()
        guard let url = URL(string: authorized.url) else {
            gate.noteAnswered()
            return nil
        }
        var attempt = 0
        while true {
            attempt += 1
            // The check ended while the first attempt failed: no second PUT after its verdict.
            if attempt == 2, gate.openedAt != nil { break }
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
                if attempt == 1, gate.handedOverAt == nil, gate.openedAt == nil, delegate.status == nil, Self.isClose(error) { continue }
            }
            gate.noteAnswered()
            return delegate.status
        }
        gate.noteAnswered()
        return nil
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
