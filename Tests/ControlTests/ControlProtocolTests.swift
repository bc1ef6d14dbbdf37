@testable import Control
import Foundation
import Testing

/// A responder that answers from fixed values and remembers what it was asked.
final class FakeResponder: ControlResponder, @unchecked Sendable {
    let lock = NSLock()
    var paused: [String: Bool] = [:]
    var woken: [String] = []
    var released: [String] = []
    let names = ["home", "work"]

    func status(domain: String?) throws(ControlFailure) -> StatusReport {
        let domains = try select(domain).map { DomainStatus(name: $0, state: .idle, localFolder: "/l/\($0)", remote: "file:///r/\($0)") }
        return StatusReport(generatedAt: Date(timeIntervalSince1970: 1_800_000_000), daemon: DaemonInfo(running: true, pid: 1),
                            domains: domains)
    }

    func conflicts(domain: String?, limit: Int) throws(ControlFailure) -> ConflictList {
        ConflictList(conflicts: [])
    }

    func setPaused(_ paused: Bool, domain: String?) throws(ControlFailure) -> [String] {
        let chosen = try select(domain)
        lock.withLock { for name in chosen { self.paused[name] = paused } }
        return chosen
    }

    func syncNow(domain: String?) throws(ControlFailure) -> [String] {
        let chosen = try select(domain)
        lock.withLock { woken += chosen }
        return chosen
    }

    func allowDeletions(domain: String?) throws(ControlFailure) -> [String] {
        let chosen = try select(domain)
        lock.withLock { released += chosen }
        return chosen.filter { $0 == "home" }  // only "home" holds deletions
    }

    /// Reports each path as a whole file of "home"; a hydrate starts job 7.
    func files(_ request: ControlRequest) throws(ControlFailure) -> (reports: [FileReport], job: HydrationJob?) {
        let reports = (request.paths ?? []).map { FileReport(path: $0, domain: "home") }
        return (reports, request.command == .hydrate ? HydrationJob(id: 7, files: []) : nil)
    }

    func progress(job id: Int) throws(ControlFailure) -> HydrationJob {
        guard id == 7 else { throw ControlFailure(.failed, "no job \(id)") }
        return HydrationJob(id: 7, files: [HydrationJob.File(path: "/l/home/a", total: 10, done: 10, finished: true)])
    }

    private func select(_ domain: String?) throws(ControlFailure) -> [String] {
        guard let domain else { return names }
        guard names.contains(domain) else { throw ControlFailure(.unknownDomain, "no domain \(domain)") }
        return [domain]
    }
}

@Suite struct ControlDispatchTests {
    let responder = FakeResponder()

    func answer(_ text: String) -> ControlResponse {
        ControlDispatch.answer(Data(text.utf8), responder: responder)
    }

    @Test func aStatusRequestIsAnsweredWithTheResponderStatus() {
        let response = answer(#"{"version":1,"command":"status"}"#)
        #expect(response.ok)
        #expect(response.status?.domains.map(\.name) == ["home", "work"])
        #expect(response.version == ControlProtocol.version)
    }

    @Test func allowDeletionsReachesTheResponderAndNamesTheDomainsThatHeldSome() {
        #expect(answer(#"{"version":1,"command":"allow-deletions","domain":"work"}"#).domains == [])
        #expect(answer(#"{"version":1,"command":"allow-deletions"}"#).domains == ["home"])
        #expect(responder.released == ["work", "home", "work"])
        #expect(answer(#"{"version":1,"command":"allow-deletions","domain":"nope"}"#).error?.code == .unknownDomain)
    }

    @Test func fileCommandsReachTheResponderOnlyWithAbsolutePathsAndAPositiveRange() {
        let status = answer(#"{"version":1,"command":"file-status","paths":["/l/home/a","/l/home/b"]}"#)
        #expect(status.files?.map(\.path) == ["/l/home/a", "/l/home/b"] && status.job == nil)
        #expect(answer(#"{"version":1,"command":"hydrate","paths":["/l/home/a"],"offset":0,"length":5}"#).job?.id == 7)
        #expect(answer(#"{"version":1,"command":"progress","job":7}"#).job?.finished == true)
        #expect(answer(#"{"version":1,"command":"evict","paths":["home/a"]}"#).error?.message.contains("not an absolute path") == true)
        #expect(answer(#"{"version":1,"command":"pin"}"#).error?.code == .badRequest)
        #expect(answer(#"{"version":1,"command":"hydrate","paths":["/a"],"offset":-1}"#).error?.message.contains("negative") == true)
        #expect(answer(#"{"version":1,"command":"hydrate","paths":["/a"],"length":0}"#).error?.message.contains("not positive") == true)
        #expect(answer(#"{"version":1,"command":"progress"}"#).error?.code == .badRequest)
    }

    @Test func pauseResumeAndSyncNowReachTheResponder() {
        #expect(answer(#"{"version":1,"command":"pause","domain":"work"}"#).domains == ["work"])
        #expect(responder.paused == ["work": true])
        #expect(answer(#"{"version":1,"command":"resume"}"#).domains == ["home", "work"])
        #expect(responder.paused == ["work": false, "home": false])
        #expect(answer(#"{"version":1,"command":"sync-now","domain":"home"}"#).domains == ["home"])
        #expect(responder.woken == ["home"])
    }

    @Test(arguments: [
        ("garbage", ControlFailure.Code.badRequest),
        (#"{"version":1,"comm"#, .badRequest),
        ("[1,2,3]", .badRequest),
        (#"{"command":"status"}"#, .badRequest),
        (#"{"version":2,"command":"status"}"#, .unsupportedVersion),
        (#"{"version":1,"command":"explode"}"#, .unknownCommand),
        (#"{"version":1,"command":"status","domain":7}"#, .badRequest),
        (#"{"version":1,"command":"pause","domain":"nope"}"#, .unknownDomain),
        ("", .badRequest),
    ])
    func malformedRequestsGetAnErrorAnswer(request: String, code: ControlFailure.Code) {
        let response = answer(request)
        #expect(!response.ok)
        #expect(response.error?.code == code)
        #expect(response.error?.message.isEmpty == false)
    }

    @Test func anAnswerIsOneLineOfJSONThatDecodesBack() throws {
        let response = answer(#"{"version":1,"command":"status"}"#)
        let line = ControlJSON.line(response)
        #expect(line.last == 0x0A)
        #expect(!line.dropLast().contains(0x0A))
        #expect(try ControlJSON.decoder().decode(ControlResponse.self, from: line) == response)
    }
}

@Suite struct StatusExitCodeTests {
    func report(running: Bool = true, _ states: [DomainStatus.State], pending: Int = 0) -> StatusReport {
        StatusReport(generatedAt: Date(), daemon: DaemonInfo(running: running), domains: states.enumerated().map {
            DomainStatus(name: "d\($0.offset)", state: $0.element, localFolder: "/", remote: "file:///",
                         pending: PendingSummary(count: pending))
        })
    }

    @Test func exitCodesFollowTheWorstDomain() {
        #expect(report([.idle, .idle]).exitCode == 0)
        #expect(report([.idle], pending: 2).exitCode == 1)
        #expect(report([.idle, .syncing]).exitCode == 1)
        #expect(report([.paused, .idle]).exitCode == 1)
        #expect(report([.starting]).exitCode == 1)
        #expect(report([.syncing, .error]).exitCode == 2)
        #expect(report(running: false, [.notRunning]).exitCode == 3)
    }

    @Test func bytesAreShownInBinaryUnits() {
        #expect(StatusScreen.bytes(512) == "512 B")
        #expect(StatusScreen.bytes(1536) == "1.5 KiB")
        #expect(StatusScreen.bytes(300 << 20) == "300.0 MiB")
    }
}
