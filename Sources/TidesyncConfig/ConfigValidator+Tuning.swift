import TOMLKit

/// Reading a domain's timings, limits, lists and `[domain.placeholders]`, and
/// noting the settings that are accepted but not yet in effect.
extension ConfigValidator {
    mutating func readTuning(_ table: TOMLTable, in scope: KeyScope, into domain: inout DomainConfiguration) {
        if let value = duration(table, "poll_interval", in: scope) { domain.pollInterval = value }
        if let value = duration(table, "debounce", in: scope) { domain.debounce = value }
        if let value = duration(table, "rescan_interval", in: scope) { domain.rescanInterval = value }
        if let value = integer(table, "transfers", in: scope, range: 1...64, expected: "an integer from 1 to 64") {
            domain.transfers = value
        }
        if let value = integer(table, "max_delete", in: scope, range: 0...Int.max, expected: "an integer of 0 or more") {
            domain.maxDelete = value
        }
        readTimeouts(table, in: scope, into: &domain)
        if let value = strings(table, "exclude", in: scope, example: "exclude = [\"*.tmp\"]") { domain.exclude = value }
        if let value = readBundleExtensions(table, in: scope) { domain.bundleExtensions = value }
    }

    /// `connect_timeout`, `low_speed_limit` (a size per second; 0 turns the check off)
    /// and `low_speed_time`. A limit of more than 1 GiB/s or a time of more than an hour
    /// is a mistake (a unit slipped), not a setting.
    private mutating func readTimeouts(_ table: TOMLTable, in scope: KeyScope, into domain: inout DomainConfiguration) {
        if let value = duration(table, "connect_timeout", in: scope) {
            if value > .seconds(600) {
                valueError("\(scope.name("connect_timeout")) must be at most 10 minutes, e.g. \"15s\".", key: "connect_timeout", in: scope)
            } else {
                domain.connectTimeout = value
            }
        }
        if let (limit, written) = size(table, "low_speed_limit", in: scope) {
            if limit.bytes > 1 << 30 {
                valueError("\(written) is more than 1GiB per second; write the slowest acceptable speed per second, "
                               + "e.g. \"1KiB\", or 0 to turn the check off.", key: "low_speed_limit", in: scope)
            } else {
                domain.lowSpeedLimit = limit
            }
        }
        if let value = duration(table, "low_speed_time", in: scope) {
            if value > .seconds(3600) {
                valueError("\(scope.name("low_speed_time")) must be at most 1 hour, e.g. \"30s\".", key: "low_speed_time", in: scope)
            } else if value < .seconds(1) {
                valueError("\(scope.name("low_speed_time")) must be at least 1 second, e.g. \"30s\".", key: "low_speed_time", in: scope)
            } else {
                domain.lowSpeedTime = value
            }
        }
    }

    private mutating func readBundleExtensions(_ table: TOMLTable, in scope: KeyScope) -> [String]? {
        let key = "bundle_extensions"
        guard let extensions = strings(table, key, in: scope, example: "bundle_extensions = [\"app\", \"pages\"]") else {
            return nil
        }
        var valid = true
        for (index, text) in extensions.enumerated()
        where text.isEmpty || text.contains(".") || text.contains("/") {
            valid = false
            let bare = text.split(whereSeparator: { $0 == "." || $0 == "/" }).last.map(String.init) ?? "app"
            error(
                "\(scope.subject)\(key)[\(index)] = \(DiagnosticWording.quoted(text)) must be an extension without a "
                    + "dot, e.g. \(DiagnosticWording.quoted(bare)).",
                at: sourceMap.value(scope.path(key) + ["[\(index)]"])
            )
        }
        return valid ? extensions : nil
    }

    mutating func readPlaceholders(_ domainTable: TOMLTable, in domainScope: KeyScope) -> PlaceholderSettings {
        var settings = PlaceholderSettings()
        guard let value = domainTable["placeholders"] else { return settings }
        guard let table = value.table else {
            typeError("placeholders", value, in: domainScope, expected: "a table ([domain.placeholders])")
            return settings
        }
        let scope = KeyScope(
            path: domainScope.path("placeholders"), label: domainScope.label, keyPrefix: "placeholders.",
            place: "in [domain.placeholders] of \(domainScope.label)"
        )
        let name = domainTable["name"]?.string
        checkKeys(table, allowed: Self.placeholderKeys, in: scope, misplaced: misplacedInDomain(scope, name: name, inPlaceholders: true))
        if let mode = readMode(table, in: scope) { settings.mode = mode }
        if let minimum = size(table, "min_size", in: scope) { settings.minimumSize = minimum.0 }
        if let alignment = readAlignment(table, in: scope) { settings.alignment = alignment }
        if let globs = strings(table, "keep_local", in: scope, example: "keep_local = [\"Documents/**\"]") {
            settings.keepLocal = globs
        }
        if let timeout = duration(table, "hydration_timeout", in: scope) { settings.hydrationTimeout = timeout }
        if let programs = readProgramNames(table, "hydrate_on_open", in: scope) { settings.hydrateOnOpen = programs }
        if let programs = readProgramNames(table, "deny_hydration", in: scope) { settings.denyHydration = programs }
        if let thumbnails = bool(table, "thumbnails", in: scope) { settings.thumbnails = thumbnails }
        if let limit = size(table, "thumbnail_max_fetch", in: scope) {
            // The whole image is held in memory to be decoded; a photo is rarely over 32 MiB.
            if limit.0.bytes > PlaceholderSettings.thumbnailMaxFetchLimit.bytes {
                valueError("\(limit.written) is too large: an image is fetched into memory for its thumbnail; "
                    + "write at most \"\(PlaceholderSettings.thumbnailMaxFetchLimit.bytes >> 20)MiB\" (or 0 for embedded previews only).",
                    key: "thumbnail_max_fetch", in: scope)
            } else {
                settings.thumbnailMaxFetch = limit.0
            }
        }
        if let cache = path(table, "thumbnail_cache", in: scope) { settings.thumbnailCache = cache }
        return settings
    }

    /// Process names as the kernel keeps them (`/proc/PID/comm`): not empty, no `/`, at
    /// most 15 bytes (a longer name is cut there, so it would never match).
    private mutating func readProgramNames(_ table: TOMLTable, _ key: String, in scope: KeyScope) -> [String]? {
        guard let names = strings(table, key, in: scope, example: "\(key) = [\"cp\", \"tar\"]") else { return nil }
        var valid = true
        for (index, name) in names.enumerated() {
            let problem: String?
            if name.isEmpty {
                problem = "is empty; write a program's name, e.g. \"cp\""
            } else if name.contains("/") {
                let bare = name.split(separator: "/").last.map(String.init) ?? name
                problem = "is a path; write the program's name only, e.g. \(DiagnosticWording.quoted(bare))"
            } else if name.utf8.count > 15 {
                let cut = String(decoding: name.utf8.prefix(15), as: UTF8.self)
                problem = "is longer than the 15 bytes the kernel keeps of a process name; write \(DiagnosticWording.quoted(cut))"
            } else {
                problem = nil
            }
            guard let problem else { continue }
            valid = false
            error("\(scope.subject)\(scope.name(key))[\(index)] = \(DiagnosticWording.quoted(name)) \(problem).",
                  at: sourceMap.value(scope.path(key) + ["[\(index)]"]))
        }
        return valid ? names : nil
    }

    private mutating func readMode(_ table: TOMLTable, in scope: KeyScope) -> PlaceholderMode? {
        guard let text = string(table, "mode", in: scope) else { return nil }
        guard let mode = PlaceholderMode(rawValue: text) else {
            valueError(
                "\(written("mode", text, in: scope)) is not a placeholder mode; use \"off\", \"auto\" or \"all\".",
                key: "mode", in: scope
            )
            return nil
        }
        return mode
    }

    private mutating func readAlignment(_ table: TOMLTable, in scope: KeyScope) -> ByteCount? {
        guard let parsed = size(table, "alignment", in: scope) else { return nil }
        let (alignment, written) = parsed
        let fix = "use e.g. \"4KiB\", \"64KiB\" or \"1MiB\"."
        if !alignment.isPowerOfTwo {
            valueError("\(written) is not a power of two; \(fix)", key: "alignment", in: scope)
            return nil
        }
        if alignment.bytes < 4096 {
            valueError("\(written) is below the minimum of 4KiB; \(fix)", key: "alignment", in: scope)
            return nil
        }
        return alignment
    }

    /// Notes for settings that may not take effect where the daemon runs: a `mode` written
    /// out that asks for placeholders (the default `auto` says nothing: it falls back to
    /// whole files, and `status` says why).
    mutating func noteSettingsNotInEffect(_ table: TOMLTable, domain: DomainConfiguration, in scope: KeyScope) {
        guard domain.placeholders.mode != .off, table["placeholders"]?.table?["mode"] != nil else { return }
        note(
            "\(scope.label): placeholders need the daemon to run as root on Linux 6.14 or later (files are downloaded "
                + "in full otherwise)",
            at: sourceMap.value(scope.path("placeholders") + ["mode"])
        )
    }
}
