import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SyncEngine
import Synchronization

// A PUT whose body is sent up to its held end, knowing when that part left this process:
// the write-guard probe's decisive in-place check (`WebDAVStore.decisiveLook`). Through
// AsyncHTTPClient's delegate API, whose `didSendRequestPart` comes once a part's bytes are
// written to the socket; the async API's body iterator is asked for more at once while the
// client's event loop has not caught up, which on a busy machine says nothing.
extension WebDAVConnection {
    /// Sends a PUT of `first` then `rest` to `path`, `rest` held until `gate` opens.
    /// `gate.handedOverAt` is set once `first` is written to the socket. Returns the
    /// answer's status, or why the exchange failed. Cancelled by `deadline` or by the
    /// caller's cancellation.
    func heldPut(path: String, first: ByteBuffer, rest: ByteBuffer, gate: HeldBody.Gate,
                 deadline: Duration) async throws(ProviderError) -> Result<HTTPResponseStatus, any Error> {
        let authorized = try await authorized(request("PUT", path: path))
        let client = try await client()
        let url: URL
        do {
            url = try URL(string: authorized.url).orThrow()
        } catch {
            return .failure(error)
        }
        let body = HTTPClient.Body.stream(contentLength: Int64(first.readableBytes + rest.readableBytes)) { writer in
            let sent = writer.write(.byteBuffer(first))
            return sent.flatMap {
                let released = sent.eventLoop.makePromise(of: Void.self)
                Task {
                    await gate.wait()
                    released.succeed(())
                }
                return released.futureResult.flatMap { writer.write(.byteBuffer(rest)) }
            }
        }
        let delegate = HeldPutDelegate(gate: gate, firstLength: first.readableBytes)
        do {
            let request = try HTTPClient.Request(url: url, method: .PUT, headers: authorized.headers, body: body)
            let task = client.execute(request: request, delegate: delegate, deadline: .now() + WebDAVConnection.timeAmount(deadline))
            return .success(try await withTaskCancellationHandler {
                try await task.futureResult.get()
            } onCancel: {
                task.cancel()
            })
        } catch {
            return .failure(error)
        }
    }
}

extension Optional {
    fileprivate func orThrow() throws -> Wrapped {
        guard let self else { throw HTTPClientError.invalidURL }
        return self
    }
}

/// Notes when the held PUT's first part was written to the socket; collects the status.
private final class HeldPutDelegate: HTTPClientResponseDelegate {
    typealias Response = HTTPResponseStatus
    let gate: HeldBody.Gate
    let firstLength: Int
    private let status = Mutex<HTTPResponseStatus?>(nil)

    init(gate: HeldBody.Gate, firstLength: Int) {
        self.gate = gate
        self.firstLength = firstLength
    }

    func didSendRequestPart(task: HTTPClient.Task<Response>, _ part: IOData) {
        if part.readableBytes == firstLength { gate.noteHandedOver() }
    }

    func didReceiveHead(task: HTTPClient.Task<Response>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        status.withLock { $0 = head.status }
        gate.noteAnswered()
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveError(task: HTTPClient.Task<Response>, _ error: any Error) {
        // The exchange failed (a refusal that closed the connection): the held part will not
        // be asked for, and waiting for it would wait until the deadline.
        gate.noteAnswered()
    }

    func didFinishRequest(task: HTTPClient.Task<Response>) throws -> Response {
        guard let status = status.withLock({ $0 }) else { throw HTTPClientError.remoteConnectionClosed }
        return status
    }
}
