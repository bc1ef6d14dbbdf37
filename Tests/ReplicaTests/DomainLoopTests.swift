import Glibc
import Replica
import SyncEngine
import Testing

/// The instant the tables count from. Read once: nothing here waits on the clock, every
/// instant the loop sees is `origin` plus a table's milliseconds.
private let origin = ContinuousClock.now
private func at(_ ms: Int) -> ContinuousClock.Instant { origin + .milliseconds(ms) }
private func p(_ path: String) -> RemotePath { try! RemotePath(string: path) }

private let unreachable = ProviderError(.serverUnreachable, "the server did not answer")
private let folderMissing = ProviderError(.cannotSynchronize, "the local folder does not exist")

/// How a pass the loop asked for ends, in a table.
enum PassEnd: Sendable {
    case finished(DomainLoop.PassOutcome)
    case failed(ProviderError)
}

/// One round of a table: the watcher's events at `ms`, then a round begun at `ms` with
/// `seen`, and the steps the loop takes in it (up to the step that ends it: `observe` is
/// left out, a `wait` or `stop` is the last one listed).
struct Round: Sendable {
    var ms: Int
    var events: [WatchEvent] = []
    var seen = DomainLoop.Observation()
    /// How the passes of this round end (none listed: a pass that found nothing to do).
    var passes: [PassEnd] = []
    /// What `checkRoot` finds.
    var rootPresent = true
    var steps: [DomainLoop.Step]
}

/// A rule of the loop as a table of rounds, from the loop's start at 0 ms.
struct Rule: Sendable, CustomTestStringConvertible {
    var name: String
    var poll: Duration = .seconds(60)
    var rescan: Duration = .seconds(3600)
    var watching = true
    var rounds: [Round]

    var testDescription: String { name }
}

/// Stands in for `LiveSync`: carries the loop's steps out on a real `ChangeAggregator`
/// (debounce 1 s, cap 30 s) and answers its questions from the table.
struct Carrier {
    var loop: DomainLoop
    var queue: ChangeAggregator
    var rootPresent = true
    var passes: [PassEnd] = []

    init(poll: Duration = .seconds(60), rescan: Duration = .seconds(3600), watching: Bool = true) {
        let timing = DomainLoop.Timing(debounce: .seconds(1), pollInterval: poll, rescanInterval: rescan)
        loop = DomainLoop(timing: timing, start: at(0), watching: watching)
        queue = ChangeAggregator(debounce: timing.debounce, cap: timing.settleCap)
    }

    /// Runs one round at `ms` and returns its steps.
    mutating func round(_ ms: Int, _ seen: DomainLoop.Observation = .init()) -> [DomainLoop.Step] {
        var steps: [DomainLoop.Step] = []
        var step = loop.begin(seen, at: at(ms))
        while step != .observe, steps.count < 50 {
            steps.append(step)
            if step == .stop { break }
            step = answer(step, at: at(ms))
        }
        return steps
    }

    private mutating func answer(_ step: DomainLoop.Step, at now: ContinuousClock.Instant) -> DomainLoop.Step {
        switch step {
        case .checkRoot:
            return loop.rootChecked(present: rootPresent)
        case .watch:
            return loop.watched(true)
        case .collect(let everything):
            let (changes, firstSeen) = everything ? queue.takeAll() : queue.takeDue(at: now)
            return loop.collected(changes, firstSeen: firstSeen, nextDue: queue.deadline())
        case .pass:
            switch passes.isEmpty ? .finished(.init()) : passes.removeFirst() {
            case .finished(let outcome): return loop.passFinished(outcome)
            case .failed(let error): return loop.passFailed(error)
            }
        case .putBack(let paths, let firstSeen):
            queue.putBack(paths, firstSeen: firstSeen, at: now)
            return loop.next()
        case .rewatch(let paths):
            for path in paths { queue.add(.folderAppeared(path), at: now) }
            return loop.next()
        case .stop, .observe, .wait, .unwatch, .park, .missingRoot:
            return loop.next()
        }
    }
}

/// The domain loop's rules as tables of rounds with explicit instants: no sleeping, no
/// clock, no disk. `LiveSync` only carries these steps out.
@Suite("DomainLoop: the domain loop's rules")
struct DomainLoopTests {
    static let start = Round(ms: 0, steps: [.collect(everything: true), .pass(.full)])
    static let idle = [DomainLoop.Step.collect(everything: false)]
    static func watched(_ paths: [RemotePath: Bool], remote: Bool = false, overdue: Set<RemotePath> = []) -> DomainLoop.Step {
        .pass(.watched(SettledChanges(paths: paths, overdue: overdue), remote: remote))
    }

    func check(_ rule: Rule, sourceLocation: SourceLocation = #_sourceLocation) {
        var carrier = Carrier(poll: rule.poll, rescan: rule.rescan, watching: rule.watching)
        for round in rule.rounds {
            for event in round.events { carrier.queue.add(event, at: at(round.ms)) }
            carrier.rootPresent = round.rootPresent
            carrier.passes = round.passes
            #expect(carrier.round(round.ms, round.seen) == round.steps, "round at \(round.ms) ms", sourceLocation: sourceLocation)
            #expect(carrier.passes.isEmpty, "a pass of the round at \(round.ms) ms did not run", sourceLocation: sourceLocation)
        }
    }

    @Test("parking: a failure parks the domain, a success clears it", arguments: [
        Rule(name: "park on unreachable, resume with a full pass when it clears", rounds: [
            Round(ms: 0, passes: [.failed(unreachable)],
                  steps: [.collect(everything: true), .pass(.full), .park(unreachable, retryAt: at(5_000))]),
            Round(ms: 1_000, events: [.changed(p("a"))], steps: [.wait(until: at(5_000))]),
            Round(ms: 5_000, steps: [.collect(everything: true), .pass(.full)]),
            Round(ms: 6_000, steps: idle + [.wait(until: at(65_000))]),
        ]),
        Rule(name: "a step that parks the domain parks it after the pass", rounds: [
            start,
            Round(ms: 1_000, events: [.changed(p("a"))], steps: idle + [.wait(until: at(2_000))]),
            Round(ms: 2_000, passes: [.finished(.init(steps: 2, succeeded: 1, complete: false, parked: unreachable))],
                  steps: idle + [watched([p("a"): false]), .park(unreachable, retryAt: at(7_000))]),
            Round(ms: 7_000, steps: [.collect(everything: true), .pass(.full)]),
        ]),
        Rule(name: "a failure of any disposition parks: nothing is decided from a partial view", rounds: [
            Round(ms: 0, passes: [.failed(ProviderError(.locked, "locked"))],
                  steps: [.collect(everything: true), .pass(.full), .park(ProviderError(.locked, "locked"), retryAt: at(5_000))]),
            Round(ms: 5_000, passes: [.failed(ProviderError(.permissionDenied, "no"))],
                  steps: [.collect(everything: true), .pass(.full), .park(ProviderError(.permissionDenied, "no"), retryAt: at(15_000))]),
        ]),
        Rule(name: "a cannotSynchronize failure asks for the sync folder; found, the retry is a plain full pass", rounds: [
            Round(ms: 0, passes: [.failed(folderMissing)],
                  steps: [.collect(everything: true), .pass(.full), .park(folderMissing, retryAt: at(5_000)), .checkRoot]),
            Round(ms: 5_000, steps: [.collect(everything: true), .pass(.full)]),
        ]),
        Rule(name: "a cannotSynchronize failure with the sync folder gone waits for it", rounds: [
            Round(ms: 0, passes: [.failed(folderMissing)], rootPresent: false,
                  steps: [.collect(everything: true), .pass(.full), .park(folderMissing, retryAt: at(5_000)), .checkRoot]),
            Round(ms: 5_000, rootPresent: false, steps: [.checkRoot, .missingRoot(retryAt: at(10_000))]),
            Round(ms: 10_000, steps: [.checkRoot, .watch, .collect(everything: true), .pass(.full)]),
        ]),
    ])
    func parking(_ rule: Rule) { check(rule) }

    @Test("backoff: retries double from 5 s to their cap, 5 min or the poll interval", arguments: [
        (3600, [5, 10, 20, 40, 80, 160, 300, 300]), (60, [5, 10, 20, 40, 60, 60]), (2, [2, 2, 2]),
    ])
    func backoff(pollSeconds: Int, waits: [Int]) {
        var carrier = Carrier(poll: .seconds(pollSeconds), rescan: .seconds(86_400))
        var ms = 0
        for wait in waits {
            carrier.passes = [.failed(unreachable)]
            #expect(carrier.round(ms) == [.collect(everything: true), .pass(.full), .park(unreachable, retryAt: at(ms + wait * 1000))])
            #expect(carrier.round(ms + wait * 1000 - 1) == [.wait(until: at(ms + wait * 1000))])
            ms += wait * 1000
        }
        // A pass that gets through starts the count again.
        #expect(carrier.round(ms) == [.collect(everything: true), .pass(.full)])
        carrier.passes = [.failed(unreachable)]
        #expect(carrier.round(ms + 1, .init(syncNow: true)) == [.collect(everything: true), .pass(.full),
                                          .park(unreachable, retryAt: at(ms + 1 + min(5, pollSeconds) * 1000))])
    }

    @Test("the sync folder gone: stop watching, sync nothing until it is back", arguments: [
        Rule(name: "root gone: unwatch, look at each retry, watch again and scan it all when back", rounds: [
            start,
            Round(ms: 1_000, seen: .init(rootGone: "the sync folder /x was deleted"), rootPresent: false,
                  steps: [.unwatch(reason: "the sync folder /x was deleted"), .checkRoot, .missingRoot(retryAt: at(6_000))]),
            Round(ms: 2_000, events: [.changed(p("a"))], steps: [.wait(until: at(6_000))]),
            Round(ms: 6_000, rootPresent: false, steps: [.checkRoot, .missingRoot(retryAt: at(11_000))]),
            Round(ms: 11_000, steps: [.checkRoot, .watch, .collect(everything: true), .pass(.full)]),
            Round(ms: 12_000, steps: idle + [.wait(until: at(71_000))]),
        ]),
        Rule(name: "root gone while paused: unwatch at once, look for it once resumed", rounds: [
            start,
            Round(ms: 1_000, seen: .init(paused: true, rootGone: "gone"), steps: [.unwatch(reason: "gone"), .wait(until: nil)]),
            Round(ms: 9_000, steps: [.checkRoot, .watch, .collect(everything: true), .pass(.full)]),
        ]),
        Rule(name: "the stop flag ends the loop, whatever else waits", rounds: [
            start,
            Round(ms: 1_000, seen: .init(stopped: true, paused: true, syncNow: true, rootGone: "gone"), steps: [.stop]),
        ]),
    ])
    func rootGone(_ rule: Rule) { check(rule) }

    @Test("pause and sync-now", arguments: [
        Rule(name: "paused: nothing is taken or passed; what settled meanwhile passes once resumed", rounds: [
            start,
            Round(ms: 1_000, events: [.changed(p("a"))], seen: .init(paused: true), steps: [.wait(until: nil)]),
            Round(ms: 70_000, seen: .init(paused: true), steps: [.wait(until: nil)]),
            // Past the cap by now: synced as it is, writer or not.
            Round(ms: 71_000, steps: idle + [watched([p("a"): false], overdue: [p("a")])]),
            Round(ms: 71_000, steps: [watched([:], remote: true)]),
        ]),
        Rule(name: "sync-now ends a park's wait with a full pass", rounds: [
            Round(ms: 0, passes: [.failed(unreachable)],
                  steps: [.collect(everything: true), .pass(.full), .park(unreachable, retryAt: at(5_000))]),
            Round(ms: 1_000, seen: .init(syncNow: true), steps: [.collect(everything: true), .pass(.full)]),
        ]),
        Rule(name: "sync-now when idle: a full pass now", rounds: [
            start,
            Round(ms: 1_000, seen: .init(syncNow: true), steps: [.collect(everything: true), .pass(.full)]),
            Round(ms: 2_000, steps: idle + [.wait(until: at(61_000))]),
        ]),
        Rule(name: "sync-now while paused counts once resumed", rounds: [
            start,
            Round(ms: 1_000, seen: .init(paused: true, syncNow: true), steps: [.wait(until: nil)]),
            Round(ms: 2_000, steps: [.collect(everything: true), .pass(.full)]),
        ]),
    ])
    func controls(_ rule: Rule) { check(rule) }

    @Test("settling: debounce, files held open for writing", arguments: [
        Rule(name: "a path passes once quiet for the debounce; events on it coalesce", rounds: [
            start,
            Round(ms: 1_000, events: [.changed(p("a"))], steps: idle + [.wait(until: at(2_000))]),
            Round(ms: 1_500, events: [.changed(p("a"))], steps: idle + [.wait(until: at(2_500))]),
            Round(ms: 2_500, steps: idle + [watched([p("a"): false])]),
            Round(ms: 2_600, steps: idle + [.wait(until: at(60_000))]),
        ]),
        Rule(name: "a file held open goes back to the queue and passes after another quiet period", rounds: [
            start,
            Round(ms: 1_000, events: [.changed(p("a"))], steps: idle + [.wait(until: at(2_000))]),
            Round(ms: 2_000, passes: [.finished(.init(heldBack: [p("a"): false]))],
                  steps: idle + [watched([p("a"): false]), .putBack([p("a"): false], firstSeen: at(1_000))]),
            Round(ms: 2_500, steps: idle + [.wait(until: at(3_000))]),
            Round(ms: 3_000, steps: idle + [watched([p("a"): false])]),
        ]),
        Rule(name: "held back from a full pass: first seen at the round's start when nothing waited", rounds: [
            Round(ms: 0, passes: [.finished(.init(heldBack: [p("a"): true]))],
                  steps: [.collect(everything: true), .pass(.full), .putBack([p("a"): true], firstSeen: at(0))]),
            Round(ms: 1_000, steps: idle + [watched([p("a"): true])]),
        ]),
    ])
    func settling(_ rule: Rule) { check(rule) }

    @Test("a file held open for writing forever is passed as overdue at the cap (30 s after its first event)")
    func heldOpenForever() {
        var carrier = Carrier(poll: .seconds(3600))
        #expect(carrier.round(0) == [.collect(everything: true), .pass(.full)])
        carrier.queue.add(.changed(p("log")), at: at(1_000))
        var passed: [DomainLoop.Step] = []
        for ms in stride(from: 1_000, to: 31_000, by: 250) {
            carrier.passes = [.finished(DomainLoop.PassOutcome(heldBack: [p("log"): false]))]
            let steps = carrier.round(ms)
            if carrier.passes.isEmpty {
                passed.append(steps[1])
                #expect(steps.last == .putBack([p("log"): false], firstSeen: at(1_000)))
            }
        }
        #expect(passed.count == 29, "once a second from 2 s to 30 s")
        #expect(passed.allSatisfy { $0 == Self.watched([p("log"): false]) })
        // The overdue pass syncs it as it is, writer or not.
        carrier.passes = []
        #expect(carrier.round(31_000) == Self.idle + [Self.watched([p("log"): false], overdue: [p("log")])])
        #expect(carrier.round(31_250) == Self.idle + [.wait(until: at(3_600_000))])
    }

    @Test("the remote poll, the rescan backstop and lost events", arguments: [
        Rule(name: "the remote is walked every poll interval, counted from the last walk", rounds: [
            start,
            Round(ms: 59_999, steps: idle + [.wait(until: at(60_000))]),
            Round(ms: 60_000, steps: idle + [watched([:], remote: true)]),
            Round(ms: 60_001, steps: idle + [.wait(until: at(120_000))]),
        ]),
        Rule(name: "settled paths when the poll is due pass first, then the poll, before anything settled since", rounds: [
            start,
            Round(ms: 59_000, events: [.changed(p("a"))], steps: idle + [.wait(until: at(60_000))]),
            Round(ms: 60_000, steps: idle + [watched([p("a"): false])]),
            Round(ms: 61_500, events: [.changed(p("b"))], steps: [watched([:], remote: true)]),
            Round(ms: 62_500, steps: idle + [watched([p("b"): false])]),
            Round(ms: 62_600, steps: idle + [.wait(until: at(121_500))]),
        ]),
        Rule(name: "the poll after a pass over settled paths leaves that pass's follow-up standing", rounds: [
            start,
            Round(ms: 59_000, events: [.changed(p("a"))], steps: idle + [.wait(until: at(60_000))]),
            // The upload failed (a server error, retried later): a follow-up in a minute.
            Round(ms: 60_000, passes: [.finished(.init(steps: 1, complete: false))], steps: idle + [watched([p("a"): false])]),
            Round(ms: 60_001, steps: [watched([:], remote: true)]),
            Round(ms: 60_002, steps: idle + [.wait(until: at(120_000))]),
            Round(ms: 120_000, steps: [.collect(everything: true), .pass(.full)]),
        ]),
        Rule(name: "a poll owed is walked by a full pass that comes first", rounds: [
            start,
            Round(ms: 59_000, events: [.changed(p("a"))], steps: idle + [.wait(until: at(60_000))]),
            Round(ms: 60_000, steps: idle + [watched([p("a"): false])]),
            Round(ms: 60_100, seen: .init(syncNow: true), steps: [.collect(everything: true), .pass(.full)]),
            Round(ms: 60_200, steps: idle + [.wait(until: at(120_100))]),
        ]),
        Rule(name: "with no watcher, each poll scans the whole folder", watching: false, rounds: [
            start,
            Round(ms: 1_000, steps: idle + [.wait(until: at(60_000))]),
            Round(ms: 60_000, steps: [.collect(everything: true), .pass(.full)]),
        ]),
        Rule(name: "the whole folder is scanned every rescan interval", poll: .seconds(3600), rescan: .seconds(300), rounds: [
            start,
            Round(ms: 1_000, steps: idle + [.wait(until: at(300_000))]),
            Round(ms: 300_000, steps: [.collect(everything: true), .pass(.full)]),
            Round(ms: 300_001, steps: idle + [.wait(until: at(600_000))]),
        ]),
        Rule(name: "lost events: the whole folder is scanned once quiet, and poll and rescan count from it", rounds: [
            start,
            Round(ms: 10_000, events: [.overflow], steps: idle + [.wait(until: at(11_000))]),
            Round(ms: 11_000, steps: idle + [.pass(.watched(SettledChanges(fullScan: true), remote: false))]),
            Round(ms: 12_000, steps: idle + [.wait(until: at(71_000))]),
        ]),
    ])
    func scans(_ rule: Rule) { check(rule) }

    @Test("work left over after a pass", arguments: [
        Rule(name: "followed up at once when the pass got somewhere", poll: .seconds(3600), rounds: [
            Round(ms: 0, passes: [.finished(.init(steps: 3, succeeded: 2, complete: false))],
                  steps: [.collect(everything: true), .pass(.full)]),
            Round(ms: 1, steps: [.collect(everything: true), .pass(.full)]),
            Round(ms: 2, steps: idle + [.wait(until: at(3_600_001))]),
        ]),
        Rule(name: "with no progress, followed up after a minute (the items' backoff)", poll: .seconds(3600), rounds: [
            Round(ms: 0, passes: [.finished(.init(steps: 3, complete: false))], steps: [.collect(everything: true), .pass(.full)]),
            Round(ms: 1, steps: idle + [.wait(until: at(60_000))]),
            Round(ms: 60_000, steps: [.collect(everything: true), .pass(.full)]),
        ]),
        Rule(name: "with no progress and a short poll, followed up at the poll interval", poll: .seconds(20), rounds: [
            Round(ms: 0, passes: [.finished(.init(steps: 3, complete: false))], steps: [.collect(everything: true), .pass(.full)]),
            Round(ms: 1, steps: idle + [.wait(until: at(20_000))]),
        ]),
        Rule(name: "conflicts to resolve are followed up at once three times in a row, then after 1 s, 2 s, 4 s… up to a minute",
             poll: .seconds(3600), rounds: [
            Round(ms: 0, passes: [.finished(.init(steps: 1, resolved: 1, complete: false))], steps: [.collect(everything: true), .pass(.full)]),
            Round(ms: 1, passes: [.finished(.init(steps: 1, resolved: 1, complete: false))], steps: [.collect(everything: true), .pass(.full)]),
            Round(ms: 2, passes: [.finished(.init(steps: 1, resolved: 1, complete: false))], steps: [.collect(everything: true), .pass(.full)]),
            Round(ms: 3, passes: [.finished(.init(steps: 1, resolved: 1, complete: false))], steps: [.collect(everything: true), .pass(.full)]),
            Round(ms: 4, steps: idle + [.wait(until: at(1_003))]),
            Round(ms: 1_003, passes: [.finished(.init(steps: 1, resolved: 1, complete: false))], steps: [.collect(everything: true), .pass(.full)]),
            Round(ms: 1_004, steps: idle + [.wait(until: at(3_003))]),
            Round(ms: 3_003, passes: [.finished(.init(steps: 1, resolved: 1, complete: false))], steps: [.collect(everything: true), .pass(.full)]),
            Round(ms: 3_004, steps: idle + [.wait(until: at(7_003))]),
        ]),
        Rule(name: "a server still changing is looked at again at most a minute apart", poll: .seconds(3600),
             rounds: [0, 1, 2, 3, 1_003, 3_003, 7_003, 15_003, 31_003, 63_003].map { ms in
                 Round(ms: ms, passes: [.finished(.init(steps: 1, resolved: 1, complete: false))], steps: [.collect(everything: true), .pass(.full)])
             } + [Round(ms: 63_004, steps: idle + [.wait(until: at(123_003))])]),
    ])
    func followUp(_ rule: Rule) { check(rule) }

    /// A test that waits for the loop to be quiet must not take the instant between a pass
    /// that found the server changed and the pass that looks again for quiet.
    @Test("the loop says when the last pass left work for a pass at once, and only then")
    func followsUpAtOnce() {
        var carrier = Carrier(poll: .seconds(3600))
        #expect(!carrier.loop.followsUpAtOnce)
        carrier.passes = [.finished(.init(steps: 1, resolved: 1, complete: false))]
        _ = carrier.round(0)
        #expect(carrier.loop.followsUpAtOnce, "a guard found the server changed: a pass follows at once")
        carrier.passes = [.finished(.init(steps: 3, complete: false))]
        _ = carrier.round(1)
        #expect(!carrier.loop.followsUpAtOnce, "no progress: the follow-up waits a minute, which is not at once")
        _ = carrier.round(2)
        #expect(!carrier.loop.followsUpAtOnce)
    }

    @Test("folders the watch limit left out", arguments: [
        Rule(name: "watched again and scanned every minute", poll: .seconds(3600), rounds: [
            start,
            Round(ms: 1_000, seen: .init(unwatched: [p("d"): ENOSPC]), steps: idle + [.wait(until: at(61_000))]),
            Round(ms: 61_000, steps: [.rewatch([p("d")])]),
            Round(ms: 61_000, steps: idle + [.wait(until: at(62_000))]),
            Round(ms: 62_000, steps: idle + [watched([p("d"): true])]),
        ]),
        Rule(name: "more folders left out later join the same try", poll: .seconds(3600), rounds: [
            start,
            Round(ms: 1_000, seen: .init(unwatched: [p("d"): ENOSPC]), steps: idle + [.wait(until: at(61_000))]),
            Round(ms: 30_000, seen: .init(unwatched: [p("e"): ENOSPC]), steps: idle + [.wait(until: at(61_000))]),
            Round(ms: 61_000, steps: [.rewatch([p("d"), p("e")])]),
        ]),
    ])
    func unwatched(_ rule: Rule) { check(rule) }
}
