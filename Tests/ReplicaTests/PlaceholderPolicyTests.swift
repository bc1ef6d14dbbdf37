import Replica
import SyncEngine
import Testing

/// The `[domain.placeholders]` policy as a table: which files start dataless, what a mode
/// change does to files already here, what a new remote version does to a placeholder.
@Suite struct PlaceholderPolicyTests {
    static func entry(_ path: String, _ size: Int64, kind: ItemKind = .file) -> RemoteEntry {
        RemoteEntry(path: try! RemotePath(string: path), kind: kind, size: size, etag: ETag(value: "v"))
    }

    static let auto = PlaceholderPolicy(mode: .auto, minimumSize: 1000, keepLocal: ["Documents/**", "*.kdbx"])
    static let all = PlaceholderPolicy(mode: .all, minimumSize: 1000, keepLocal: ["Documents/**"])
    static let off = PlaceholderPolicy(mode: .off, minimumSize: 1000, keepLocal: [])

    @Test("which files start dataless", arguments: [
        (auto, entry("video.mp4", 5000), false, PlaceholderPolicy.Form.dataless),
        (auto, entry("video.mp4", 1000), false, .dataless),
        (auto, entry("notes.txt", 999), false, .whole),
        (auto, entry("video.mp4", 5000), true, .whole),                 // pinned
        (auto, entry("Documents/big.pdf", 5000), false, .whole),        // keep_local glob
        (auto, entry("Documents/deep/big.pdf", 5000), false, .whole),
        (auto, entry("Archive/Documents.zip", 5000), false, .dataless),
        (auto, entry("vault/pass.kdbx", 5000), false, .whole),          // a name glob, at any depth
        (auto, entry("Foo.app", 5000, kind: .bundle), false, .whole),   // bundles are never dataless
        (all, entry("notes.txt", 10), false, .dataless),
        (all, entry("empty.txt", 0), false, .whole),                    // nothing to fetch
        (all, entry("Documents/a.txt", 10), false, .whole),
        (off, entry("video.mp4", 5000), false, .whole),
    ])
    func form(policy: PlaceholderPolicy, entry: RemoteEntry, pinned: Bool, expected: PlaceholderPolicy.Form) {
        #expect(policy.form(of: entry, pinned: pinned) == expected)
    }

    @Test("a mode change never evicts, and off downloads every placeholder", arguments: [
        (auto, "video.mp4", Materialization.materialized, false, PlaceholderPolicy.Adjustment.keep),  // off → auto
        (all, "video.mp4", .materialized, false, .keep),
        (off, "video.mp4", .dataless, false, .materialize),                                         // auto → off
        (off, "video.mp4", .partial, false, .materialize),
        (auto, "video.mp4", .dataless, false, .keep),
        (auto, "video.mp4", .partial, true, .materialize),                                          // pinned
        (auto, "Documents/big.pdf", .dataless, false, .materialize),                                // now keep_local
    ])
    func modeChange(policy: PlaceholderPolicy, path: String, state: Materialization, pinned: Bool,
                    expected: PlaceholderPolicy.Adjustment) throws {
        #expect(policy.adjustment(of: try RemotePath(string: path), holding: state, pinned: pinned) == expected)
    }

    @Test("a new remote version makes a placeholder dataless again, unless it must be whole", arguments: [
        (auto, "video.mp4", Materialization.partial, false, PlaceholderPolicy.Adjustment.dropRanges),
        (auto, "video.mp4", .dataless, false, .dropRanges),
        (auto, "video.mp4", .partial, true, .materialize),
        (off, "video.mp4", .partial, false, .materialize),
        (auto, "video.mp4", .materialized, false, .keep),
    ])
    func newVersion(policy: PlaceholderPolicy, path: String, state: Materialization, pinned: Bool,
                    expected: PlaceholderPolicy.Adjustment) throws {
        #expect(policy.adjustmentForNewVersion(of: try RemotePath(string: path), holding: state, pinned: pinned) == expected)
    }
}
