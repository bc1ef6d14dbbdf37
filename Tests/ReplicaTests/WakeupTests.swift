import Foundation
import Replica
import Testing

/// The domain loop's wait: a signal or the deadline ends it, whichever comes first.
@Suite struct WakeupTests {
    @Test func aDeadlineEndsTheWaitWithoutASignal() async {
        let clock = ContinuousClock()
        await withTaskGroup(of: Duration.self) { group in
            for index in 0..<50 {
                group.addTask {
                    let wakeup = Wakeup()
                    let start = clock.now
                    await wakeup.wait(until: start + .milliseconds(20 + index * 3))
                    return clock.now - start
                }
            }
            for await waited in group {
                #expect(waited >= .milliseconds(19), "woke before its deadline: \(waited)")
            }
        }
    }

    @Test func aSignalEndsTheWaitBeforeItsDeadline() async {
        let wakeup = Wakeup()
        let clock = ContinuousClock()
        let start = clock.now
        Task { try? await Task.sleep(for: .milliseconds(30)); wakeup.signal() }
        await wakeup.wait(until: start + .seconds(3600))
        #expect(clock.now - start < .seconds(60))
    }

    @Test func aSignalBeforeTheWaitIsNotLost() async {
        let wakeup = Wakeup()
        wakeup.signal()
        await wakeup.wait(until: nil)
    }
}
