// When the thumbnail maker tries again: an image whose fetch failed after 1 minute, then 2,
// 4 … at most 6 hours (a new version of it at once), and nothing at all while the cache
// cannot be written (a full disk, a quota, a folder that is not the user's) — else every
// image would be downloaded only to be thrown away. The maker wakes itself for the earliest
// retry; polls that change nothing do not wake it.
import Foundation
import Glibc
import Synchronization
import Thumbnails

/// A failure and when to try again.
struct RetryState: Sendable, Equatable {
    /// Failures in a row.
    var count: Int
    var retry: ContinuousClock.Instant
    /// The image's mtime and size when it failed (nil for the cache): another version is
    /// tried at once.
    var stamp: ThumbnailMaker.Stamp?
}

extension ThumbnailMaker {
    /// An image version as the cache stamps it.
    struct Stamp: Sendable, Equatable {
        var mtime: Int64
        var size: Int64
    }

    /// How long to wait after the `count`th failure in a row: 1 minute doubling, at most 6 hours.
    static func retryDelay(afterFailures count: Int) -> Duration {
        .seconds(min(60 << min(max(count, 1) - 1, 9), 6 * 3600))
    }

    /// Notes `outcome` in the index (made, or none to be had) or as a failure to try again.
    func record(_ outcome: Outcome, for target: Target) {
        switch outcome {
        case .made:
            index.set(target.id, ThumbnailIndex.Entry(target, made: true))
            failures.withLock { _ = $0.removeValue(forKey: target.id) }
        case .none(let why):
            logger.debug("thumbnails: none for \(target.path): \(why)")
            index.set(target.id, ThumbnailIndex.Entry(target, made: false))
            failures.withLock { _ = $0.removeValue(forKey: target.id) }
        case .failed(let why):
            let state = failures.withLock { failures in
                let before = failures[target.id].flatMap { $0.stamp == target.stamp ? $0.count : nil } ?? 0
                let state = RetryState(count: before + 1, retry: .now + Self.retryDelay(afterFailures: before + 1), stamp: target.stamp)
                failures[target.id] = state
                return state
            }
            wake(at: state.retry)
            logger.info("thumbnails: \(target.path): \(why); tried again in \(Self.minutes(Self.retryDelay(afterFailures: state.count)))")
        case .cacheFailed(let why):
            block(why)
        }
    }

    /// True unless the cache is known not to be writable; looks (on the writer: makes the
    /// size folders, creates and removes a file) unless it is known not to be and its retry
    /// is not due; `now` (`tidesync thumbnails`) looks whatever is known.
    func cacheUsable(now: Bool = false) async -> Bool {
        if !now, let blocked = blocked.withLock({ $0 }), blocked.retry > .now { return false }
        let problem = await writer.run { self.cacheProblem() } ?? "the daemon is stopping"
        if let problem {
            block(problem)
            return false
        }
        if blocked.withLock({ state in defer { state = nil }; return state != nil }) {
            logger.info("thumbnails: \(cache.root.path) can be written again")
        }
        return true
    }

    /// Stops all fetching until the cache can be written, and says so.
    func block(_ why: String) {
        let state = blocked.withLock { state -> RetryState in
            let count = (state?.count ?? 0) + 1
            state = RetryState(count: count, retry: .now + Self.retryDelay(afterFailures: count), stamp: nil)
            return state!
        }
        wake(at: state.retry)
        let again = Self.minutes(Self.retryDelay(afterFailures: state.count))
        logger.warning("thumbnails: cannot write \(cache.root.path): \(why); no image is fetched for a thumbnail until it can (tried again in \(again))")
    }

    /// Why the cache cannot take thumbnails now, or nil. Runs on `writer`.
    func cacheProblem() -> String? {
        for size in Self.sizes {
            do throws(ThumbnailError) {
                try ThumbnailCache.makeFolders(cache.root.appendingPathComponent(size.rawValue).path)
            } catch {
                if case .cache(let reason) = error { return reason }
                return error.description
            }
        }
        var template = Array("\(cache.root.path)/\(ThumbnailSize.normal.rawValue)/.tidesync-probe.XXXXXX".utf8CString)
        let descriptor = mkstemp(&template)
        guard descriptor >= 0 else { return "cannot create a file in it: \(String(cString: strerror(errno)))" }
        close(descriptor)
        unlink(template)
        return nil
    }

    /// Wakes the maker at `instant` unless an earlier wake is due; `reconcile` asks again
    /// for the earliest retry left, so none is forgotten.
    func wake(at instant: ContinuousClock.Instant) {
        let schedule = nextWake.withLock { pending -> Bool in
            if let pending, pending <= instant, pending > .now { return false }
            pending = instant
            return true
        }
        guard schedule else { return }
        let delay = ContinuousClock.now.duration(to: instant)
        let nanoseconds = max(0, delay.components.seconds) * 1_000_000_000 + max(0, delay.components.attoseconds / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [self] in
            nextWake.withLock { if $0 == instant { $0 = nil } }
            trigger.yield()
        }
    }

    /// Asks for a wake at the earliest retry still waiting.
    func wakeForRetries() {
        let earliest = (failures.withLock { $0.values.map(\.retry) } + [blocked.withLock { $0?.retry }].compactMap { $0 }).min()
        if let earliest { wake(at: earliest) }
    }

    static func minutes(_ delay: Duration) -> String {
        let minutes = delay.components.seconds / 60
        return minutes >= 60 ? "\(minutes / 60) h" : "\(minutes) min"
    }
}

extension ThumbnailMaker.Target {
    var stamp: ThumbnailMaker.Stamp { ThumbnailMaker.Stamp(mtime: mtime, size: size) }
}
