import Foundation

/// `tidesync status` for people: one screen, read at a glance. Pure: the time zone and `now`
/// are arguments.
public enum StatusScreen {
    /// The report as lines of text (no trailing newline).
    public static func render(_ report: StatusReport, now: Date, timeZone: TimeZone = .current) -> String {
        var lines: [String] = []
        let clock = Clock(now: now, timeZone: timeZone)
        if report.daemon.running {
            var head = "tidesync daemon running"
            if let pid = report.daemon.pid { head += " (pid \(pid)" + (report.daemon.startedAt.map { ", up " + clock.span(now.timeIntervalSince($0)) } ?? "") + ")" }
            lines.append(head)
        } else {
            lines.append("tidesync daemon NOT RUNNING: this is what the state DBs say about the last run.")
            lines.append("Start it with `systemctl --user start tidesync` (or `tidesync run`).")
        }
        for domain in report.domains {
            lines.append("")
            lines += render(domain, clock: clock)
        }
        return lines.joined(separator: "\n")
    }

    static func render(_ domain: DomainStatus, clock: Clock) -> [String] {
        var lines = ["\(domain.name): \(headline(domain, clock: clock))"]
        if let error = domain.error {
            lines.append("  " + error.message)
            if let retry = error.nextRetry, domain.state != .notRunning {
                lines.append("  next retry: \(clock.time(retry)) (\(clock.relative(retry)))"
                             + (error.since.map { "; failing since \(clock.time($0))" } ?? ""))
            }
        }
        if let paused = domain.paused, paused.by != "massDelete" { lines.append("  " + paused.reason) }
        if let held = domain.heldDeletions { lines.append("  " + held.summary) }
        if let changed = domain.remoteChanged { lines.append("  " + changed) }
        lines += onDemandLines(domain, clock: clock)
        if let folders = domain.unreadableFolders, !folders.isEmpty {
            lines.append("  NOT SYNCED, cannot be read (left as they were on both sides; tried again each pass):")
            for folder in folders.prefix(10) {
                lines.append("    \(folder.side) \(folder.path.isEmpty ? "(the whole folder)" : folder.path): \(folder.reason)")
            }
            if folders.count > 10 { lines.append("    and \(folders.count - 10) more") }
        }
        lines.append("  \(domain.localFolder) ⇄ \(domain.remote)")
        lines.append("  last complete sync: " + (domain.lastCompleteSync.map { "\(clock.time($0)) (\(clock.relative($0)))" } ?? "never"))
        if !domain.transfers.isEmpty {
            lines.append("  transfers:")
            for transfer in domain.transfers { lines.append("    " + describe(transfer, clock: clock)) }
        }
        if domain.pending.count > 0 {
            lines.append("  pending: \(count(domain.pending.count, "item"))")
            for item in domain.pending.oldest {
                lines.append("    \(item.step) \(item.path): \(item.reason), waiting \(clock.span(clock.now.timeIntervalSince(item.since)))")
            }
        }
        if !domain.itemsInError.isEmpty {
            lines.append("  items in error: \(domain.itemsInError.count)")
            for item in domain.itemsInError.prefix(5) {
                let retry = item.nextRetry.map { ", next try \(clock.relative($0))" } ?? ""
                lines.append("    \(item.step) \(item.path) (attempt \(item.attempts)\(retry)): \(item.lastError)")
            }
        }
        if let twins = domain.normalisationTwins, !twins.isEmpty {
            lines.append("  warning: \(count(twins.count, "group")) of names that differ only in Unicode normalisation (both kept; macOS sees one name):")
            for twin in twins.prefix(5) { lines.append("    " + twin.paths.joined(separator: "  |  ")) }
        }
        if domain.conflicts.count > 0 {
            lines.append("  conflicts: \(domain.conflicts.count) (`tidesync conflicts` lists them)")
            for conflict in domain.conflicts.newest.prefix(3) { lines.append("    \(conflict.copy)") }
        }
        let counts = domain.counts
        var holds = "  \(count(counts.files, "file")), \(count(counts.folders, "folder"))"
        if counts.symlinks > 0 { holds += ", \(count(counts.symlinks, "symlink"))" }
        if counts.bundles > 0 { holds += ", \(count(counts.bundles, "bundle"))" }
        holds += "; \(bytes(counts.bytesOnDisk)) on disk of \(bytes(counts.bytesTotal))"
        lines.append(holds)
        if let watches = domain.watcher.watchesInUse {
            lines.append("  watcher: \(count(watches, "watch", plural: "watches")), \(count(domain.watcher.overflowRescans, "overflow rescan"))"
                         + (domain.watcher.watchLimitReached ? ", WATCH LIMIT REACHED" : ""))
        }
        return lines
    }

    static func headline(_ domain: DomainStatus, clock: Clock) -> String {
        switch domain.state {
        case .idle: return "idle, in sync"
        case .starting: return "starting (first scan)"
        case .syncing:
            let moving = domain.transfers.count
            return moving > 0 ? "syncing (\(count(moving, "transfer")) running)" : "syncing"
        case .paused:
            if domain.paused?.by == "massDelete" { return "PAUSED: deletions held back" }
            return "paused"
        case .error: return "ERROR: " + (domain.error.map { phrase($0.code) } ?? "unknown")
        case .notRunning: return "not running" + (domain.error.map { " (\(phrase($0.code)))" } ?? "")
        }
    }

    /// A short name for an error code.
    static func phrase(_ code: String) -> String {
        switch code {
        case "serverUnreachable": "server unreachable"
        case "serverFailedItem": "the server is failing requests"
        case "notAuthenticated": "not authenticated (check the user name and password)"
        case "insufficientQuota": "the server's quota is exceeded"
        case "localDiskFull": "the local disk is full"
        case "watchLimitReached": "the inotify watch limit is reached"
        case "massDeletePaused": "deletions held back"
        case "cannotSynchronize": "cannot sync"
        default: code
        }
    }

    static func describe(_ transfer: Transfer, clock: Clock) -> String {
        let arrow = transfer.direction == "download" ? "↓" : "↑"
        var text = "\(arrow) \(transfer.path)  \(bytes(transfer.bytesDone))"
        if let total = transfer.bytesTotal { text += " / \(bytes(total))" }
        if let rate = transfer.bytesPerSecond { text += "  \(bytes(Int64(rate)))/s" }
        if let left = transfer.secondsLeft { text += "  ETA \(clock.span(left))" }
        return text
    }

    static func count(_ value: Int, _ noun: String, plural: String? = nil) -> String {
        "\(value) " + (value == 1 ? noun : plural ?? noun + "s")
    }

    /// `1.5 MiB`: binary units, one decimal above bytes.
    /// The last hydrations, newest first: who pulled how much of what, and when.
    static func hydrationLines(_ hydrations: [HydrationStatus], clock: Clock) -> [String] {
        guard !hydrations.isEmpty else { return [] }
        return ["  last hydrations:"] + hydrations.reversed().map { entry in
            "    \(entry.program ?? "?") (pid \(entry.pid)) \(bytes(entry.bytes)) of \(entry.path), \(clock.time(entry.at))"
        }
    }

    /// Files on demand: on or why not, the placeholders, who waits for bytes now, who pulled what.
    static func onDemandLines(_ domain: DomainStatus, clock: Clock) -> [String] {
        var lines = domain.filesOnDemand.map { ["  " + $0] } ?? []
        if let placeholders = domain.placeholders {
            lines.append("  placeholders: \(placeholders.dataless) dataless, \(placeholders.partial) partial; "
                         + "\(bytes(domain.counts.bytesOnDisk)) on disk of \(bytes(domain.counts.bytesTotal))")
        }
        return lines + inFlightLines(domain.hydrationsInFlight ?? [], clock: clock)
            + hydrationLines(domain.recentHydrations ?? [], clock: clock)
    }

    /// The programs waiting for a placeholder's bytes now, and since when.
    static func inFlightLines(_ hydrations: [HydrationStatus], clock: Clock) -> [String] {
        guard !hydrations.isEmpty else { return [] }
        return ["  hydrating now:"] + hydrations.map { entry in
            "    \(entry.program ?? "?") (pid \(entry.pid)) \(entry.writing == true ? "writes" : "reads") \(entry.path): "
                + "\(bytes(entry.bytes)) to fetch, waiting since \(clock.time(entry.at))"
        }
    }

    public static func bytes(_ value: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
        var amount = Double(value)
        var unit = 0
        while amount >= 1024, unit < units.count - 1 {
            amount /= 1024
            unit += 1
        }
        return unit == 0 ? "\(value) B" : String(format: "%.1f %@", amount, units[unit])
    }

    /// Times as people read them.
    struct Clock {
        let now: Date
        let timeZone: TimeZone

        /// "14:05:09" today, "2026-11-22 14:05" otherwise.
        func time(_ date: Date) -> String {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = timeZone
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = timeZone
            formatter.dateFormat = calendar.isDate(date, inSameDayAs: now) ? "HH:mm:ss" : "yyyy-MM-dd HH:mm"
            return formatter.string(from: date)
        }

        /// "in 20 s", "3 min ago".
        func relative(_ date: Date) -> String {
            let seconds = date.timeIntervalSince(now)
            if abs(seconds) < 1 { return "now" }
            return seconds > 0 ? "in " + span(seconds) : span(-seconds) + " ago"
        }

        /// "42 s", "3 min", "2 h 5 min", "3 d".
        func span(_ seconds: Double) -> String {
            let whole = Int(max(0, seconds).rounded())
            if whole < 60 { return "\(whole) s" }
            if whole < 3600 { return "\(whole / 60) min" }
            if whole < 86400 { return "\(whole / 3600) h" + (whole % 3600 >= 60 ? " \(whole % 3600 / 60) min" : "") }
            return "\(whole / 86400) d"
        }
    }
}
