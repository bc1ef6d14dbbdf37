import Foundation
@testable import SyncEngine
import Testing

/// What the journal does with a failed step, decided from its error's disposition: the
/// entry goes, or the item's one entry counts the failure and backs off by the failed-item
/// policy. Instants are explicit; nothing sleeps.
@Suite("FailureBooking: what the journal does with a failed step")
struct FailureBookingTests {
    static let now = Date(timeIntervalSince1970: 1_000_000)

    static func earlier(_ id: Int64, attempts: Int) -> PendingOperation {
        PendingOperation(id: id, itemID: nil, kind: "upload", payload: Data(), createdAt: now, attempts: attempts)
    }

    @Test("parking and resolving errors drop the step's entry", arguments: [
        ProviderError.Code.serverUnreachable, .notAuthenticated, .localDiskFull, .versionMismatch, .filenameCollision,
    ])
    func dropped(code: ProviderError.Code) {
        let error = ProviderError(code, "x")
        #expect(error.disposition == .parkDomain || error.disposition == .resolve)
        let booking = FailureBooking(error, operation: 7, earlier: nil, keepingEntry: false, now: Self.now)
        #expect(booking.outcome == .dropped)
        #expect(booking.changes == [.completeOperation(7)])
    }

    @Test("an entry that names remote scratch stays, whatever the error", arguments: [
        ProviderError.Code.serverUnreachable, .versionMismatch, .cannotSynchronize,
    ])
    func kept(code: ProviderError.Code) {
        let error = ProviderError(code, "x")
        let booking = FailureBooking(error, operation: 7, earlier: Self.earlier(3, attempts: 1), keepingEntry: true, now: Self.now)
        #expect(!booking.changes.contains(.completeOperation(7)))
    }

    @Test("a first failure backs the step's own entry off 10 s")
    func firstFailure() {
        let error = ProviderError(.cannotSynchronize, "x")
        let booking = FailureBooking(error, operation: 7, earlier: nil, keepingEntry: false, now: Self.now)
        let notBefore = Self.now.addingTimeInterval(10)
        #expect(booking.outcome == .backedOff(attempt: 1, delay: .seconds(10), notBefore: notBefore))
        #expect(booking.changes == [.failOperation(7, error: error.description, notBefore: notBefore)])
    }

    @Test("a further failure counts on the earlier entry, doubling, and drops the new one", arguments: [
        (1, 20), (2, 40), (5, 320), (20, 3600),
    ])
    func furtherFailure(attempts: Int, seconds: Int) {
        let error = ProviderError(.cannotSynchronize, "x")
        let booking = FailureBooking(error, operation: 7, earlier: Self.earlier(3, attempts: attempts), keepingEntry: false,
                                     now: Self.now)
        let notBefore = Self.now.addingTimeInterval(TimeInterval(seconds))
        #expect(booking.outcome == .backedOff(attempt: attempts + 1, delay: .seconds(seconds), notBefore: notBefore))
        #expect(booking.changes == [.failOperation(3, error: error.description, notBefore: notBefore), .completeOperation(7)])
    }

    @Test("a step with no entry of its own writes only the earlier entry's backoff")
    func noEntry() {
        let error = ProviderError(.cannotSynchronize, "x")
        #expect(FailureBooking(error, operation: nil, earlier: nil, keepingEntry: false, now: Self.now).changes.isEmpty)
        let booking = FailureBooking(error, operation: nil, earlier: Self.earlier(3, attempts: 1), keepingEntry: false, now: Self.now)
        #expect(booking.changes == [.failOperation(3, error: error.description, notBefore: Self.now.addingTimeInterval(20))])
    }
}
