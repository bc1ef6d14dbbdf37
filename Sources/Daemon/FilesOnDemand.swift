// Which placeholder port a domain runs with. Placeholders are made only where something
// hydrates them: a domain whose settings ask for files on demand gets the fanotify port
// only when a pre-content group can be made (root, Linux 6.14+) and its folder's file
// system takes a pre-content mark (ext4, xfs, btrfs; not tmpfs or NFS); otherwise every
// file is downloaded whole, and the log and `status` say why.
import Control
import Foundation
import Glibc
import Logging
import Replica
import SyncEngine
import SystemCalls
import TidesyncConfig

/// The placeholder port of one domain, and what status says about it.
struct FilesOnDemand: Sendable {
    /// What the runner brings files down through.
    let port: any PlaceholderPort
    /// The fanotify port when files on demand runs.
    let fanotify: FanotifyPlaceholders?
    /// For `status`: on, or why not; nil when the domain did not ask for it.
    let sentence: String?
    /// The placeholders recorded earlier are downloaded whole at the start: nothing here
    /// will ever fill them (mode off, or no pre-content events). A `run --once` leaves
    /// them as they are.
    let downloadsPlaceholders: Bool

    /// The group's place in the service manager's store; nil for `run --once`.
    let stored: StoredGroups?
    /// The domain's name (the group's name in the store).
    let domain: String

    /// The port `settings` ask for and this machine allows, for the domain `domain` in
    /// `folder`. `staysRunning` false (`run --once`): no placeholder is made, since nothing
    /// would fill it once the run exits. A daemon reuses the group the service manager
    /// kept for the domain (`stored`), or stores the new one there.
    init(_ settings: PlaceholderSettings, domain: String, folder: LocalFolder, provider: SyncProvider, staysRunning: Bool,
         stored: StoredGroups? = nil, logger: Logger) {
        let off = PlaceholdersOff(folder: folder)
        self.domain = domain
        self.stored = staysRunning ? stored : nil
        let inherited = Self.inheritedGroup(domain: domain, stored: self.stored, wanted: settings.mode != .off, logger: logger)
        guard settings.mode != .off, staysRunning else {
            (port, fanotify, downloadsPlaceholders) = (off, nil, staysRunning)
            sentence = settings.mode == .off ? nil
                : "files on demand: off for run --once (nothing would fill a placeholder after it exits); new files come down whole"
            return
        }
        let policy = PlaceholderPolicy(mode: PlaceholderPolicy.Mode(rawValue: settings.mode.rawValue) ?? .off,
                                       minimumSize: settings.minimumSize.bytes, keepLocal: settings.keepLocal)
        do throws(PreContentGroup.Failure) {
            let fanotify = try FanotifyPlaceholders(folder: folder, policy: policy, provider: provider,
                                                    alignment: settings.alignment.bytes, timeout: settings.hydrationTimeout,
                                                    rules: HydrationRules(hydrateOnOpen: settings.hydrateOnOpen,
                                                                          denyHydration: settings.denyHydration),
                                                    inherited: inherited, logger: logger)
            try Self.probe(fanotify.hydrator.group, in: folder)
            let scope = settings.mode == .all ? "every file" : "files of at least \(settings.minimumSize.bytes) bytes"
            (port, self.fanotify, downloadsPlaceholders) = (fanotify, fanotify, false)
            sentence = "files on demand: on (mode \(settings.mode.rawValue): \(scope) come down as placeholders, fetched when read)"
            logger.notice("\(sentence!)")
            self.stored?.store(fanotify.hydrator.group.descriptor, domain: domain)
        } catch {
            (port, fanotify, downloadsPlaceholders) = (off, nil, true)
            sentence = "files on demand: off, every file is downloaded whole (mode \(settings.mode.rawValue) asked for "
                + "placeholders, but \(error.description))"
            logger.notice("\(sentence!)")  // the usual case of a user's own daemon, not a fault
            if inherited != nil { self.stored?.remove(domain: domain) }
        }
    }

    /// The group the service manager kept for `domain`, checked; nil when none came, when
    /// it is not a pre-content group (closed, out of the store) or when the domain does not
    /// want one now (dropped the same way: nobody would read it).
    private static func inheritedGroup(domain: String, stored: StoredGroups?, wanted: Bool,
                                       logger: Logger) -> PreContentGroup? {
        guard let stored, let fd = stored.take(domain: domain) else { return nil }
        do throws(PreContentGroup.Failure) {
            guard wanted else { throw PreContentGroup.Failure(errno: 0, description: "files on demand is off") }
            let group = try PreContentGroup(inheriting: fd)
            logger.notice("files on demand: reusing the fanotify group the service manager kept (descriptor \(fd)); reads that waited for the restart are answered first")
            return group
        } catch {
            logger.warning("files on demand: not reusing the descriptor the service manager kept: \(error.description)")
            stored.remove(domain: domain)
            close(fd)
            return nil
        }
    }

    /// Marks a scratch file in the folder: the folder's file system must take pre-content
    /// marks, or its placeholders would read as zeros.
    private static func probe(_ group: PreContentGroup, in folder: LocalFolder) throws(PreContentGroup.Failure) {
        let scratch = folder.root + "/" + LocalFolder.temporaryPrefix + UUID().uuidString
        let fd = open(scratch, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw PreContentGroup.Failure(errno: errno, description: "a file cannot be created in \(folder.root) to check it")
        }
        defer {
            close(fd)
            unlink(scratch)
        }
        do throws(PreContentGroup.Failure) {
            try group.mark(fd, for: Hydrator.marked)
            try group.unmark(fd, for: Hydrator.marked)
        } catch {
            throw PreContentGroup.Failure(errno: error.errno, description: "the file system of \(folder.root) does not offer "
                                          + "fanotify pre-content events (ext4, xfs and btrfs do): \(error.description)")
        }
    }

    /// Before the first pass: with files on demand, starts hydrating and marks the
    /// placeholders recorded (a restart leaves none marked); without, downloads them whole
    /// (switched off: nothing would fill them).
    func start(provider: SyncProvider, logger: Logger) async {
        do throws(ProviderError) {
            if let fanotify {
                fanotify.start()
                // An inherited group's waiting readers are served once their placeholders are known.
                defer { fanotify.hydrator.release() }
                let marked = try fanotify.restoreRecorded()
                if marked > 0 { logger.info("\(marked) placeholder(s) marked for hydration") }
                return
            }
            guard downloadsPlaceholders else { return }
            let recorded = try provider.recordedPlaceholders()
            guard !recorded.isEmpty, let off = port as? PlaceholdersOff else { return }
            logger.notice("files on demand is not running: downloading the \(recorded.count) placeholder(s) left from it")
            _ = await off.downloadWhole(recorded, provider: provider, logger: logger)
        } catch {
            logger.error("cannot read the recorded placeholders: \(error.description)")
        }
    }

    /// The last hydrations and those in flight for `status`, paths below `root`; nil
    /// without files on demand.
    func hydrations(root: String) -> (@Sendable () -> DomainMonitor.Hydrations)? {
        guard let hydrator = fanotify?.hydrator else { return nil }
        @Sendable func status(_ entry: HydrationEntry) -> HydrationStatus {
            let path = entry.path.hasPrefix(root + "/") ? String(entry.path.dropFirst(root.count + 1)) : entry.path
            return HydrationStatus(program: entry.program, pid: Int(entry.pid), path: path, bytes: entry.bytes, at: entry.date,
                                   writing: entry.writing ? true : nil)
        }
        return { DomainMonitor.Hydrations(recent: hydrator.recentHydrations.map(status), inFlight: hydrator.hydrationsInFlight.map(status)) }
    }

    /// Returns once every range a reader was let on to is on disk and recorded, so a clean
    /// stop leaves none to fetch again.
    func durable() async {
        await fanotify?.durable()
    }

    /// A clean stop: locks the placeholders that are not whole (mode 000 until the next
    /// start, so a reader gets EACCES rather than zeros once the group is gone), then stops
    /// the event loop and closes the group (readers still waiting get EIO; no later open
    /// waits on a group nobody reads, as the next domain's after a reload would).
    func stop(logger: Logger) {
        guard let fanotify else { return }
        let locked = fanotify.lockPlaceholders()
        if locked > 0 { logger.info("\(locked) placeholder(s) made unreadable (mode 000) until tidesync runs again") }
        // Out of the store before it closes: a group kept there would outlive this stop,
        // its readers waiting on it, and be handed to the next start with stale marks.
        stored?.remove(domain: domain)
        fanotify.stop()
    }
}
