import Glibc
import Foundation
import Logging
import Synchronization

/// The level every `DaemonLogHandler` logs at; changed at run time by a config reload.
public final class LogLevelSetting: Sendable {
    private let level: Mutex<Logger.Level>
    public init(_ level: Logger.Level) { self.level = Mutex(level) }
    public var current: Logger.Level {
        get { level.withLock { $0 } }
    }
    public func set(_ new: Logger.Level) { level.withLock { $0 = new } }
}

/// Writes log lines to standard error. Under systemd (stderr is the journal's stream, as
/// `$JOURNAL_STREAM` says) a line carries a `<N>` syslog priority prefix and no timestamp,
/// since journald adds both; elsewhere it starts with the local time and the level.
public struct DaemonLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    let label: String
    let setting: LogLevelSetting
    let toJournal: Bool

    public init(label: String, setting: LogLevelSetting, toJournal: Bool) {
        self.label = label
        self.setting = setting
        self.toJournal = toJournal
    }

    public var logLevel: Logger.Level {
        get { setting.current }
        set { setting.set(newValue) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        let line = Self.format(level: event.level, message: "\(event.message)", metadata: merged,
                               toJournal: toJournal, now: Date())
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// One log line, newline included. Pure.
    static func format(level: Logger.Level, message: String, metadata: Logger.Metadata, toJournal: Bool,
                       now: Date) -> String {
        let fields = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let body = fields.isEmpty ? message : "[\(fields)] \(message)"
        if toJournal { return "<\(priority(level))>\(body)\n" }
        return "\(timestamp(now)) \(level) tidesync: \(body)\n"
    }

    /// The syslog priority journald reads from the `<N>` prefix.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970)
        var parts = tm()
        localtime_r(&seconds, &parts)
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &parts)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// True when standard error is the journal stream systemd connected (`$JOURNAL_STREAM`
    /// is "device:inode" of it), so a redirected stderr still gets timestamps.
    public static func stderrIsJournal(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var st = stat()
        guard fstat(2, &st) == 0 else { return false }
        return UInt64(st.st_dev) == device && UInt64(st.st_ino) == inode
    }
}
