// A clean stop leaves no placeholder readable as zeros (issue 15 item 4): see
// `PlaceholderLock` for the crash contract. Only placeholders the state DB records *and*
// the hydrator holds now (so not whole) are locked: the next start finds each of them in
// the state DB, marks it and gives its mode back.
import Glibc
import SyncEngine

extension FanotifyPlaceholders {
    /// Locks every recorded placeholder that is not whole (mode 000, its mode in
    /// `user.tidesync.mode`); call it at a clean stop, before the event loop stops (a fill
    /// still running then gives its file the mode back when it makes it whole). Returns
    /// how many were locked.
    @discardableResult
    public func lockPlaceholders() -> Int {
        let recorded: [RecordedPlaceholder]
        do throws(ProviderError) { recorded = try provider.recordedPlaceholders() } catch {
            logger.error("placeholders stay readable (as zeros where not fetched) while tidesync is stopped: \(error.description)")
            return 0
        }
        let held = hydrator.placeholders
        return recorded.filter { PlaceholderLock.lock(folder.absolute($0.path), logger: logger, isPlaceholder: held.contains) }.count
    }

    /// For the log of a placeholder that changed while stopped and is left alone: it stays
    /// locked, and how to unlock it.
    static func lockedNote(_ file: Int32) -> String {
        guard let mode = PlaceholderLock.lockedMode(of: file) else { return "" }
        return "; it keeps mode 000 that the stop gave it (its holes would read as zeros): if its content is right, "
            + "chmod \(mode) it"
    }
}
