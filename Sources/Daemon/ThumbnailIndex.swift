// The thumbnail maker's index: what it made, by item, kept in a JSON file beside the state
// DB so a restart neither makes them again nor forgets which to remove. Rewritten whole when
// it changed (a temporary file, fsynced, renamed); fine for thousands of images.
import Foundation
import Glibc
import Logging
import SyncEngine
import Synchronization

/// What the maker made, by item: kept in a JSON file so a restart neither makes them again
/// nor forgets which to remove.
final class ThumbnailIndex: Sendable {
    struct Entry: Codable, Sendable, Equatable {
        var uri: String
        var mtime: Int64
        var size: Int64
        /// False: none could be made for this version (not tried again).
        var made: Bool

        init(_ target: ThumbnailMaker.Target, made: Bool) {
            (uri, mtime, size, self.made) = (target.uri, target.mtime, target.size, made)
        }

        func matches(_ target: ThumbnailMaker.Target) -> Bool {
            uri == target.uri && mtime == target.mtime && size == target.size
        }
    }

    let path: String
    let logger: Logger
    private let table: Mutex<(entries: [String: Entry], changed: Bool)>
    /// Held while the file is written: the maker and `tidesync thumbnails` save at once.
    private let writing = Mutex(())

    init(path: String, logger: Logger) {
        self.path = path
        self.logger = logger
        Self.removeLeftovers(of: path)
        let data = FileManager.default.contents(atPath: path)
        let entries = data.flatMap { try? JSONDecoder().decode([String: Entry].self, from: $0) } ?? [:]
        if data != nil, entries.isEmpty, data?.isEmpty == false {
            logger.warning("thumbnails: \(path) cannot be read; its thumbnails are made again")
        }
        table = Mutex((entries, false))
    }

    func entries() -> [(ItemIdentifier, Entry)] {
        table.withLock { $0.entries.map { (ItemIdentifier($0.key), $0.value) } }
    }

    func entry(_ id: ItemIdentifier) -> Entry? { table.withLock { $0.entries[id.rawValue] } }

    func set(_ id: ItemIdentifier, _ entry: Entry) {
        table.withLock { table in
            guard table.entries[id.rawValue] != entry else { return }
            table.entries[id.rawValue] = entry
            table.changed = true
        }
    }

    /// Removes `id`'s entry when it is still `entry` (`tidesync thumbnails` may have set a
    /// new one since the caller read it).
    func remove(_ id: ItemIdentifier, ifStill entry: Entry) {
        table.withLock { table in
            guard table.entries[id.rawValue] == entry else { return }
            table.entries.removeValue(forKey: id.rawValue)
            table.changed = true
        }
    }

    /// Writes the index when it changed: a temporary file of its own, fsynced, renamed into
    /// place; one save at a time, so the last one written holds the latest entries.
    func save() {
        writing.withLock { _ in
            guard let entries = table.withLock({ table -> [String: Entry]? in
                defer { table.changed = false }
                return table.changed ? table.entries : nil
            }) else { return }
            do {
                let encoder = JSONEncoder()
                encoder.outputFormatting = .sortedKeys
                try write(try encoder.encode(entries))
            } catch {
                table.withLock { $0.changed = true }
                logger.warning("thumbnails: cannot write \(path): \(error); tried again after the next pass")
            }
        }
    }

    private func write(_ data: Data) throws {
        var template = Array((path + Self.temporarySuffix).utf8CString)
        let descriptor = mkstemp(&template)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)  // mkostemp is not in Swift's Glibc module
        let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var failure: POSIXErrorCode?
        var written = 0
        while failure == nil && written < data.count {
            let count = data[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count > 0 { written += count } else if count < 0 && errno == EINTR { continue } else { failure = POSIXErrorCode(rawValue: errno) ?? .EIO }
        }
        if failure == nil && fsync(descriptor) != 0 { failure = POSIXErrorCode(rawValue: errno) ?? .EIO }
        close(descriptor)
        if failure == nil, rename(temporary, path) != 0 { failure = POSIXErrorCode(rawValue: errno) ?? .EIO }
        if let failure {
            unlink(temporary)
            throw POSIXError(failure)
        }
    }

    /// mkstemp's template after the index's own name.
    static let temporarySuffix = ".XXXXXX"

    /// Removes temporaries a save cut short by a crash left beside the index.
    static func removeLeftovers(of path: String) {
        let url = URL(fileURLWithPath: path)
        let prefix = url.lastPathComponent + "."
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)) ?? []
        for name in names where name.hasPrefix(prefix) && name.count == prefix.count + 6 {
            unlink(url.deletingLastPathComponent().appendingPathComponent(name).path)
        }
    }
}
