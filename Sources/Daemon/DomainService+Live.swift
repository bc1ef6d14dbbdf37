#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import Replica
import SyncEngine

extension DomainService {
    /// How long a path may keep changing before it is synced anyway (a file written
    /// forever, a writer that never closes): 30 quiet periods, at least 30 s.
    var settleCap: Duration { max(domain.debounce * 30, .seconds(30)) }
    /// How often folders the watch limit left unwatched are scanned.
    var unwatchedRescanInterval: Duration { min(domain.pollInterval, .seconds(60)) }

    /// Syncs until stopped. Local changes come from the inotify watcher: each path is
    /// looked at once it settled (`debounce`), and only what really differs from the
    /// state DB becomes engine calls. The remote is walked every `poll_interval`; the
    /// whole sync folder is scanned at the start, after lost events, and every
    /// `rescan_interval` as the backstop. A parked domain (server unreachable, …) waits
    /// and tries again; events keep being collected meanwhile.
    public func runForever() async {
        let queue = ChangeQueue(debounce: domain.debounce, cap: settleCap)
        stop.onStop { queue.wakeup.signal() }
        var watcher = startWatcher(queue)
        defer { watcher?.stop() }
        let clock = ContinuousClock()
        var needFull = true
        var nextRemote = clock.now, nextRescan = clock.now + domain.rescanInterval
        var followUp: ContinuousClock.Instant?
        var retryAt: ContinuousClock.Instant?
        var parkedFor = 0
        var unwatched: Set<RemotePath> = []
        var nextUnwatched: ContinuousClock.Instant?
        var rootGone = false

        while !stop.isStopped {
            if let why = queue.takeRootGone() {
                logger.error("\(why); sync is stopped for this domain until it is back (nothing in it is taken as deleted)")
                watcher?.stop()
                watcher = nil
                rootGone = true
            }
            let newlyUnwatched = queue.takeUnwatched()
            if !newlyUnwatched.isEmpty {
                warnUnwatched(newlyUnwatched, known: unwatched)
                unwatched.formUnion(newlyUnwatched.keys)
                nextUnwatched = nextUnwatched ?? clock.now + unwatchedRescanInterval
            }
            let now = clock.now
            if let retry = retryAt, now < retry {
                await queue.wakeup.wait(until: retry)
                continue
            }
            retryAt = nil
            if rootGone {
                guard rootIsBack() else {
                    retryAt = now + retryDelay(max(1, parkedFor))
                    continue
                }
                logger.notice("the sync folder \(domain.localPath) is back; scanning it")
                rootGone = false
                watcher?.stop()
                watcher = startWatcher(queue)
                needFull = true
            }
            if let due = nextUnwatched, due <= now, let watcher {
                // Try to watch them again (the limit may have been raised) and scan them.
                let paths = unwatched
                unwatched = []
                nextUnwatched = nil
                for path in paths { queue.add(watcher.watchAgain(path) + [.folderAppeared(path)]) }
                continue
            }
            let full = needFull || watcher == nil && now >= nextRemote || now >= nextRescan || followUp.map { $0 <= now } ?? false
            let remoteDue = now >= nextRemote
            let (settled, firstSeen) = full ? queue.takeAll() : queue.takeDue()
            if full || remoteDue || !settled.isEmpty {
                let scope: PassScope = full ? .full : .watched(settled, remote: remoteDue)
                do throws(ProviderError) {
                    let result = try await pass.run(scope)
                    report(result)
                    if !result.heldBack.isEmpty {
                        logger.debug("\(result.heldBack.count) file(s) still open for writing; looked at again later")
                        queue.putBack(result.heldBack, firstSeen: firstSeen ?? now)
                    }
                    if let parked = result.report.parked { throw parked }
                    if full || settled.fullScan {
                        needFull = false
                        nextRescan = now + domain.rescanInterval
                    }
                    if full || remoteDue || settled.fullScan { nextRemote = now + domain.pollInterval }
                    followUp = nil
                    if result.steps > 0 && !result.report.completes(result.steps) {
                        // Work is left: at once when this pass got somewhere, otherwise
                        // when the failed items' backoff allows.
                        followUp = result.report.succeeded > 0 ? now : now + min(domain.pollInterval, .seconds(60))
                    }
                    parkedFor = 0
                } catch {
                    parkedFor += 1
                    let delay = retryDelay(parkedFor)
                    logger.error("\(error.message); trying again in \(Int(delay.components.seconds)) s",
                                 metadata: error.underlying.map { ["cause": "\($0)"] } ?? [:])
                    retryAt = now + delay
                    // What settled was not synced: the next pass looks at everything.
                    needFull = true
                    if error.code == .cannotSynchronize, !rootIsBack() { rootGone = true }
                }
                continue
            }
            var wake = [nextRemote, nextRescan]
            wake += [queue.deadline(), followUp, nextUnwatched].compactMap { $0 }
            await queue.wakeup.wait(until: wake.min())
        }
    }

    /// Watches the sync folder, or returns nil (and logs why) when inotify cannot be
    /// used: the domain is then scanned every `poll_interval` instead.
    func startWatcher(_ queue: ChangeQueue) -> InotifyWatcher? {
        do {
            let watcher = try InotifyWatcher(root: domain.localPath, exclude: exclude)
            watcher.start { queue.add($0) }
            logger.debug("watching \(watcher.watchCount) folder(s) under \(domain.localPath)")
            return watcher
        } catch {
            logger.warning("\(error.message)", metadata: error.underlying.map { ["cause": "\($0)"] } ?? [:])
            return nil
        }
    }

    func rootIsBack() -> Bool {
        var st = stat()
        return lstat(domain.localPath, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR
    }

    /// Says once per new batch that folders are not watched, why, and what to do.
    func warnUnwatched(_ paths: [RemotePath: Int32], known: Set<RemotePath>) {
        let fresh = paths.filter { !known.contains($0.key) }
        guard let (path, code) = fresh.min(by: { $0.key < $1.key }) else { return }
        let place = path.isRoot ? domain.localPath : domain.localPath + "/" + path.description
        let every = "they are scanned every \(Int(unwatchedRescanInterval.components.seconds)) s instead"
        if code == ENOSPC {
            let limit = (try? String(contentsOfFile: "/proc/sys/fs/inotify/max_user_watches", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
            logger.warning("""
                the inotify watch limit is reached (fs.inotify.max_user_watches = \(limit)): \(fresh.count) folder(s) \
                such as \(place) are not watched; \(every). To raise the limit: \
                echo fs.inotify.max_user_watches=524288 | sudo tee /etc/sysctl.d/90-tidesync.conf && sudo sysctl --system
                """)
        } else {
            logger.warning("cannot watch \(fresh.count) folder(s) such as \(place): \(String(cString: strerror(code))); \(every)")
        }
    }
}
