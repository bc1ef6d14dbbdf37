import Foundation
import SyncEngine
import Testing
@Test func zzDebug() {
    var w = World()
    for d in 0..<100 { w.synced("d\(d)", .folder); for f in 0..<100 { w.synced("d\(d)/f\(f).txt") } }
    var start = Date()
    let plan = w.plan()
    print("no-change 10k plan:", Date().timeIntervalSince(start), plan.count)
    w.moveLocal("d5", "e5"); for d in 10..<20 { w.editRemote("d\(d)/f1.txt") }
    start = Date()
    let plan2 = w.plan()
    print("changes 10k plan:", Date().timeIntervalSince(start), plan2.count)
    let r = RandomPlanTests.world(seed: 3, fileIDs: true)
    start = Date()
    for _ in 0..<100 { _ = r.plan() }
    print("small plan x100:", Date().timeIntervalSince(start))
    start = Date()
    for _ in 0..<100 { _ = PlanSimulator.run(r.plan(), on: r) }
    print("small plan+sim x100:", Date().timeIntervalSince(start))
}
