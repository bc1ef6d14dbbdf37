import Control
import Foundation

/// How a hydration job is shown: on a terminal, one bar redrawn in place (bytes, rate, time
/// left); otherwise a plain line for each file as it ends, and a total.
struct ProgressView {
    /// What a job's files count: bytes downloaded, or thumbnails made (one each).
    enum Unit { case bytes, thumbnails }

    let terminal: Bool
    var unit = Unit.bytes
    let startedAt = Date()
    /// The bytes on disk when the job started: the rate counts only what was fetched.
    let initial: Int64
    private var announced: Set<Int> = []

    init(terminal: Bool, started: HydrationJob, unit: Unit = .bytes) {
        self.terminal = terminal
        self.unit = unit
        initial = started.done
    }

    /// `count` in the job's unit.
    private func amount(_ count: Int64) -> String {
        unit == .bytes ? StatusScreen.bytes(count) : "\(count)"
    }

    mutating func show(_ job: HydrationJob) {
        if terminal {
            FileHandle.standardOutput.write(Data(("\r\u{1B}[K" + bar(job)).utf8))
            return
        }
        for (index, file) in job.files.enumerated() where file.finished && file.error == nil && !announced.contains(index) {
            announced.insert(index)
            print(unit == .bytes ? "\(file.path): \(StatusScreen.bytes(file.done)) on disk" : "\(file.path): thumbnails made")
        }
    }

    mutating func finish(_ job: HydrationJob) {
        show(job)
        let seconds = max(Date().timeIntervalSince(startedAt), 0.001)
        if terminal { print("") }
        let what = unit == .bytes ? "Hydrated \(StatusScreen.bytes(job.done)) of \(StatusScreen.bytes(job.total)) in \(job.files.count) file(s)"
            : "Made the thumbnails of \(job.done) of \(job.files.count) image(s)"
        print(what + String(format: ", %.1f s", seconds))
    }

    /// `[#######.....]  45 %  12.0 MiB of 26.5 MiB  3.2 MiB/s  5 s left`.
    func bar(_ job: HydrationJob, width: Int = 30) -> String {
        let fraction = job.total > 0 ? Double(job.done) / Double(job.total) : 1
        let filled = Int(fraction * Double(width))
        let seconds = max(Date().timeIntervalSince(startedAt), 0.001)
        let rate = Double(job.done - initial) / seconds
        let left = rate > 0 ? String(format: "%.0f s left", Double(job.total - job.done) / rate) : "time left unknown"
        return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
            + String(format: "%3ld %%  ", Int(fraction * 100)) + "\(amount(job.done)) of \(amount(job.total))  "
            + (unit == .bytes ? "\(StatusScreen.bytes(Int64(rate)))/s  " : String(format: "%.1f/s  ", rate)) + left
    }
}
