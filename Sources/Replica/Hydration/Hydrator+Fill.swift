// Filling a placeholder's range. Durability contract: the bytes are written through the
// event's descriptor (opened without notification: no event, no inotify) and the remote
// mtime is restored with `futimens` (every pwrite moves it); then the range is readable,
// and a reader is let on. The file is fsynced before the range is recorded (`persist`): a
// recorded range is on disk, and one that never got recorded (a crash) is fetched again.
// An open or a write waits for the record too, so the file's tag and mark (its ctime) no
// longer change under the program (`tar` checks the ctime after reading).
import Foundation
import Glibc
import SyncEngine
import SystemCalls

extension Hydrator {
    /// Serves one read of a placeholder: shares or starts the fetches of what it lacks,
    /// waits for them within the timeout, and answers.
    func serve(_ event: PreContentGroup.Event, wanted: ByteRange, of identity: FileIdentity, for reader: HydrationEntry) async {
        let tasks = registry.fetches(for: wanted, of: identity) { startFill($0, of: identity, through: event.file) }
        let waiting = history.started(reader)
        let durable = event.events.contains(.openPermission) || reader.writing
        let outcome = await Deadline.run(within: timeout) {
            for task in tasks { try await task.value }
            if durable { for persist in self.registry.persists(of: identity) { await persist.value } }
        }
        history.ended(waiting)
        switch outcome {
        case .finished:
            history.append(reader)
            answer(event, .allow)
        case .failed(let error): deny(event, wanted, of: identity, because: error)
        case .timedOut:
            tasks.forEach { $0.cancel() }
            deny(event, wanted, of: identity, because: ProviderError(.serverUnreachable, "the fetch took longer than \(timeout)"))
        }
    }

    /// A fill of `range` on the hydrator's threads. It may outlive the event or call that
    /// started it (another reader may share it, or this one may time out): it writes through
    /// its own copy of `file`, never a number the kernel could give to another file meanwhile.
    func startFill(_ range: ByteRange, of identity: FileIdentity, through file: Int32) -> Task<Void, any Error> {
        let copy = dup(file)
        return Task(executorPreference: HydrationExecutor.shared) {
            defer { close(copy) }
            try await self.fill(range, of: identity, through: copy)
        }
    }

    /// A read-ahead window, in alignments: one request each.
    static let readAheadWindow: Int64 = 16
    /// How many windows past the reader's own are fetched at once (in parallel: one
    /// fetch's fixed costs, its fsync and its record, overlap the others').
    static let readAheadDepth: Int64 = 3

    /// A sequential read (the byte before `wanted` is on disk or coming) has the rest of
    /// its window and the next `readAheadDepth` ones fetched meanwhile, one request per
    /// window, without waiting: the next windows travel while the reader takes in this one
    /// (a whole-file read near the server's pace, issue 15's benchmark). A failed
    /// read-ahead records nothing; the reader's own event fetches again.
    func readAhead(after wanted: ByteRange, of identity: FileIdentity, through file: Int32) {
        guard wanted.offset > 0, let placeholder = registry.placeholder(identity), wanted.end < placeholder.size,
              registry.holdsOrFetches(wanted.offset - 1, of: identity) else { return }
        let window = alignment * Self.readAheadWindow
        var start = wanted.end
        let end = min(placeholder.size, (wanted.end / window + 1 + Self.readAheadDepth) * window)
        while start < end {
            let piece = ByteRange(offset: start, length: min(end, (start / window + 1) * window) - start)
            _ = registry.fetches(for: piece, of: identity) { startFill($0, of: identity, through: file) }
            start = piece.end
        }
    }

    /// Makes sure `range` (widened to the alignment) of the placeholder open as `file` is
    /// on disk, sharing the fetches in flight: the daemon's own access before it reads a
    /// placeholder (an upload, a comparison), which the event loop lets through unfilled.
    /// Returns what the file holds then; a file that is not a registered placeholder is
    /// whole as far as the hydrator knows.
    public func hydrate(_ range: ByteRange, of file: Int32) async throws(ProviderError) -> Materialization {
        var info = stat()
        guard fstat(file, &info) == 0 else { throw LocalFolder.error(errno, "cannot look at a placeholder to hydrate") }
        let identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        guard let placeholder = registry.placeholder(identity) else { return .materialized }
        let wanted = range.aligned(to: alignment, fileSize: placeholder.size)
        let tasks = registry.fetches(for: wanted, of: identity) { startFill($0, of: identity, through: file) }
        for task in tasks {
            do { try await task.value } catch {
                throw error as? ProviderError ?? ProviderError(.cannotSynchronize, "cannot hydrate \(placeholder.path): \(error)")
            }
        }
        for persist in registry.persists(of: identity) { await persist.value }
        return registry.placeholder(identity)?.state ?? .materialized
    }

    private func deny(_ event: PreContentGroup.Event, _ range: ByteRange, of identity: FileIdentity, because error: any Error) {
        let path = registry.placeholder(identity)?.path ?? "a placeholder"
        if (error as? ProviderError)?.code == .versionNoLongerAvailable {
            // Nothing of the program's is lost: refused before it wrote a byte (a write into a
            // placeholder waits for the whole file), it keeps what it meant to write and says
            // it failed; the next pass brings the server's version down under this name.
            let why = "a write is refused before it changes anything; the server's version comes down at the next pass"
            logger.warning("\(path) changed on the server since its placeholder was made: pid \(event.pid) gets an I/O error (\(why))")
        } else {
            logger.warning("a read of \(path) \(range) by pid \(event.pid) gets an I/O error: \(error)")
        }
        let full = (error as? ProviderError)?.code == .localDiskFull
        answer(event, .deny(full ? ENOSPC : EIO))
    }

    /// Fetches `range` and writes it into the file open as `file`; then records it.
    func fill(_ range: ByteRange, of identity: FileIdentity, through file: Int32) async throws(ProviderError) {
        guard let placeholder = registry.placeholder(identity) else {
            registry.finish(range, of: identity, present: false)
            return
        }
        // Truncated since it was made (an open with O_TRUNC raises no event, the write after it
        // does): the file is the user's now. Writing the old version's bytes would splice them
        // into it, so nothing is written; the scan sees the edit. A file that grew (an append)
        // still holds the old version below its old end, with holes that must be filled, never
        // read or uploaded as zeros: ranges are clamped to the old size.
        let before = Self.localStat(of: file)
        guard before.size >= placeholder.size else {
            registry.finish(range, of: identity, present: false)
            disown(file, identity: identity, path: placeholder.path)
            return
        }
        // The mtime the file had before this write (and any other fill's writing beside it),
        // not the one it was made with: a program's write in between moved it, and restoring
        // the older one would hide that edit from the scan.
        let restored = registry.beginWriting(identity, current: before.modificationTimeNanoseconds)
        let unwritten = LocalStat(inode: before.inode, size: before.size, modificationTimeNanoseconds: restored,
                                  birthNanoseconds: before.birthNanoseconds)
        do throws(ProviderError) {
            defer {
                Self.restoreModificationTime(of: file, restored)
                registry.endWriting(identity)
            }
            do throws(ProviderError) {
                // Its blocks first (unwritten extents, still holes to SEEK_HOLE, so a crash
                // before the bytes leaves a placeholder as it was): the writes go a third
                // faster, and a full disk refuses the read before anything travels. Where the
                // file system cannot, the writes allocate as they go.
                if FileSpace.allocate(file, offset: range.offset, length: range.length) != 0 {
                    let code = errno
                    if code == ENOSPC || code == EDQUOT { throw LocalFolder.error(code, "cannot hydrate \(placeholder.path) \(range)") }
                }
                // Written straight into the file through the event's descriptor: a failure
                // leaves bytes there that nothing records, so the range stays missing and is
                // read again.
                try await placeholder.fetch(range, file)
                guard !Task.isCancelled else { throw ProviderError(.cancelled, "the fetch of \(placeholder.path) \(range) was given up") }
            } catch {
                // Its blocks go back (those a full disk let it allocate too), so a placeholder
                // never holds disk space for bytes it lacks (unless a program emptied the file
                // meanwhile: then it is theirs).
                if Self.localStat(of: file).size >= placeholder.size {
                    _ = FileSpace.punch(file, offset: range.offset, length: range.length)
                }
                throw error
            }
        } catch {
            registry.finish(range, of: identity, present: false)
            throw error
        }
        // Readable from here on; durable once `persist` has run.
        guard registry.finish(range, of: identity, present: true) != nil else { return }
        let copy = dup(file), id = UUID()
        registry.persist(identity, id: id) {
            Task(executorPreference: HydrationExecutor.shared) {
                await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                    self.persistQueue.async {
                        self.persist(range, of: identity, through: copy, before: unwritten)
                        close(copy)
                        self.registry.endPersist(identity, id: id)
                        done.resume()
                    }
                }
            }
        }
    }

    /// Returns once every range readable when it was called is on disk and recorded.
    public func durable() async {
        for persist in registry.allPersists { await persist.value }
    }

    /// Makes what the file holds durable and records it: fsync, then the file's tag (and its
    /// mark gone when whole), then the state DB. Every range readable when it begins was
    /// written before this fsync, so the record names only bytes on disk. Persists run one
    /// at a time (`persistQueue`), so what each finds readable only grows, and a file made
    /// whole by one is gone from the registry for the next.
    private func persist(_ range: ByteRange, of identity: FileIdentity, through file: Int32, before unwritten: LocalStat) {
        let written = registry.placeholder(identity)
        guard fsync(file) == 0 else {
            let error = LocalFolder.error(errno, "cannot write \(written?.path ?? "a placeholder")")
            logger.warning("\(error.description); \(range) is fetched again when it is read")
            registry.unfinish(range, of: identity)
            return
        }
        // Gone from the registry: made whole (and recorded) by another persist, or forgotten.
        guard let written else { return }
        let state = settle(file, identity: identity, as: written)
        // The daemon's writes leave the stat as it was (the size kept, the mtime restored):
        // what the file's stat is now may be a program's write since, which must stay seen.
        recorded(HydrationRecord(item: written.item, range: range, stat: unwritten, state: state,
                                 before: unwritten, present: written.present, version: written.version))
    }

    /// Stops hydrating a placeholder a program rewrote: its mark goes, and its events are
    /// allowed untouched from now on.
    private func disown(_ file: Int32, identity: FileIdentity, path: String) {
        logger.notice("\(path) was truncated by a program: it is a local file now, no longer filled from the server")
        _ = ExtendedAttributes.set(LocalFolder.PlaceholderAttribute.state, Materialization.materialized.rawValue, on: file)
        do throws(PreContentGroup.Failure) { try group.unmark(file, for: Self.marked) } catch {
            logger.warning("\(path) keeps its mark: \(error.description)")
        }
        PlaceholderLock.unlock(file)
        registry.remove(identity)
    }

    /// Tags the file with what it holds now; a whole file loses its mark and is forgotten
    /// (its reads need no more events). Returns the state.
    private func settle(_ file: Int32, identity: FileIdentity, as placeholder: KnownPlaceholder) -> Materialization {
        let state = placeholder.state
        _ = ExtendedAttributes.set(LocalFolder.PlaceholderAttribute.state, state.rawValue, on: file)
        guard state == .materialized else { return state }
        do throws(PreContentGroup.Failure) { try group.unmark(file, for: Self.marked) } catch {
            logger.warning("\(placeholder.path) is whole but keeps its mark: \(error.description)")
        }
        // Locked by a stop while this fill ran: a whole file is readable again.
        PlaceholderLock.unlock(file)
        registry.remove(identity)
        return state
    }

    static func restoreModificationTime(of file: Int32, _ nanoseconds: Int64) {
        let omit = timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2)  // UTIME_OMIT: atime as the reader left it
        var times = [omit, timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))]
        _ = futimens(file, &times)
    }

    static func localStat(of file: Int32) -> LocalStat {
        StatX.of(descriptor: file).map(LocalStat.init) ?? LocalStat(inode: 0, size: 0, modificationTimeNanoseconds: 0)
    }
}
