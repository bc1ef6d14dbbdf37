@testable import Replica
import Foundation
import Testing

/// The registry's pure rules: the mtime a fill restores when fills of one file write side
/// by side.
@Suite("Hydration registry")
struct HydrationRegistryTests {
    /// Fills stream into a placeholder, each write moving its mtime. The scenario "a large
    /// remote file comes down dataless…" saw the pass find a change after a whole read: a
    /// read-ahead fill began while another was writing, took that one's moved mtime for the
    /// file's own, and restored it last.
    @Test("fills that overlap all restore the mtime from before the first of them; the next burst starts afresh")
    func overlappingFillsRestoreOneMtime() {
        let registry = HydrationRegistry()
        let file = FileIdentity(device: 1, inode: 2)
        #expect(registry.beginWriting(file, current: 100) == 100)
        #expect(registry.beginWriting(file, current: 555) == 100, "the second fill saw the first one's write")
        #expect(registry.endWriting(file) == true)
        #expect(registry.beginWriting(file, current: 777) == 100)
        #expect(registry.endWriting(file) == true)
        #expect(registry.endWriting(file) == false)
        #expect(registry.beginWriting(file, current: 200) == 200, "a program's write between two bursts is kept")
        #expect(registry.endWriting(file) == false)
        #expect(registry.beginWriting(FileIdentity(device: 1, inode: 3), current: 300) == 300)
    }
}
