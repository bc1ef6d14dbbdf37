import Foundation

// The first poll after a save: the pass that uploaded it changed a row, so the walk's digest
// no longer proves anything, and comparing the walk with every row at once costs a second
// and 100 MiB at 100 000 items (45 s and 3 GiB at 1 000 000) — to find that the server
// holds what the pass put there. Compared as the walk hands each folder over, with that
// folder's rows only, the same answer costs one folder's rows at a time.

/// Tells whether a remote walk lists exactly what the rows record, folder by folder as the
/// walk hands the folders over (`RemoteStore.walk(below:visit:)`): every recorded item
/// listed under its name (byte for byte), of its kind, at its version (a bundle's made from
/// its members, a symlink's target too), and nothing listed that has no row but what the
/// caller ignores (excluded names). When it agrees, a comparison of the whole walk with the
/// rows would find nothing changed. Anything it cannot say for sure — a folder listed
/// before its parent or twice, a bundle being swapped, a read failing — counts as
/// disagreeing, which leaves it to that comparison.
struct WalkAgreement {
    let state: StateStore
    let bundles: BundleRule
    /// Names never recorded: listed without a row, they are passed over, with what is below.
    let ignores: (RemotePath) -> Bool
    /// Why the walk does not agree (for the log); nil while it does.
    private(set) var disagreement: String?
    /// True when a version listed was weak (Apache in the second after a change; a bundle
    /// member's, an excluded file's too): the same listing will not come again, so it is not
    /// worth keeping.
    private(set) var sawWeakVersion = false
    private var folders: [RemotePath: ItemIdentifier] = [.root: .root]
    private var compared: Set<RemotePath> = []
    private var bundleRoots: [RemotePath: (entry: RemoteEntry, row: ItemRecord)] = [:]
    private var members: [RemotePath: [RemoteEntry]] = [:]
    private var matched = 0

    init(state: StateStore, bundles: BundleRule, ignores: @escaping (RemotePath) -> Bool) {
        self.state = state
        self.bundles = bundles
        self.ignores = ignores
    }

    /// Compares a batch of the walk: each folder's entries in it with that folder's rows.
    mutating func add(_ entries: [RemoteEntry]) {
        guard disagreement == nil, !entries.isEmpty else { return }
        var groups: [RemotePath: [RemoteEntry]] = [:]
        for entry in entries {
            if entry.etag?.isWeak == true { sawWeakVersion = true }
            if entry.path.components.contains(where: { $0.hasPrefix(BundleManifest.scratchPrefix) }) {
                // The engine's temporaries are no items; a bundle's old version set aside
                // means another client is between the two moves of a swap.
                if entry.path.name.hasPrefix(BundleManifest.scratchPrefix + "bundle-"),
                   entry.path.name.hasSuffix(BundleManifest.asideSuffix) {
                    return disagree("a bundle is being replaced in \(entry.path.parent)")
                }
                continue
            }
            if let bundle = bundles.enclosingBundle(of: entry.path) {
                members[bundle, default: []].append(entry)
            } else {
                groups[entry.path.parent, default: []].append(entry)
            }
        }
        // A store that lists at once hands everything over in one batch: parents first.
        for (folder, group) in groups.sorted(by: { $0.key.components.count < $1.key.components.count }) {
            compare(group, in: folder)
            guard disagreement == nil else { return }
        }
    }

    /// Whether the whole walk agreed, once it is over: the bundles' versions, and every row
    /// met (`rows`: how many items there are, the root's included).
    mutating func finish(rows: Int) -> Bool {
        guard disagreement == nil else { return false }
        for (path, root) in bundleRoots {
            let entry = BundleManifest.bundleEntry(root.entry, members: BundleManifest.members(of: path, in: members[path] ?? []))
            guard agrees(entry, with: root.row) else {
                disagree("the bundle \(path) changed")
                return false
            }
        }
        guard matched == rows - 1 else {
            disagree("\(rows - 1 - matched) recorded item(s) not listed")
            return false
        }
        return true
    }

    /// One folder's entries against its rows, both in byte order of their names.
    private mutating func compare(_ group: [RemoteEntry], in folder: RemotePath) {
        guard let id = folders[folder] else {
            // Below an excluded folder nothing is recorded; below anything else unknown
            // here, the folder itself is new or listed after its contents.
            if !ignores(folder) { disagree("\(folder) is listed without a recorded folder") }
            return
        }
        guard compared.insert(folder).inserted else { return disagree("\(folder) was listed twice") }
        let rows: [ItemRecord]
        do { rows = try state.children(of: id) } catch { return disagree(error.message) }
        let entries = group.sorted { $0.path.name.utf8.lexicographicallyPrecedes($1.path.name.utf8) }
        var (e, r) = (0, 0)
        while e < entries.count || r < rows.count {
            let entry = e < entries.count ? entries[e] : nil, row = r < rows.count ? rows[r] : nil
            if let entry, row == nil || entry.path.name.utf8.lexicographicallyPrecedes(row!.name.utf8) {
                guard ignores(entry.path) else { return disagree("\(entry.path) is new") }
                e += 1
            } else if let row, entry == nil || !entry!.path.name.utf8.elementsEqual(row.name.utf8) {
                return disagree("\(folder)/\(row.name) is no longer listed")
            } else if let entry, let row {
                matched += 1
                (e, r) = (e + 1, r + 1)
                if entry.kind == .folder, bundles.isBundle(name: entry.path.name) {
                    guard row.kind == .bundle else { return disagree("\(entry.path) is now a bundle") }
                    bundleRoots[entry.path] = (entry, row)  // its version once its members are in
                } else if row.kind == .folder, entry.kind == .folder {
                    folders[entry.path] = row.id
                } else if !agrees(entry, with: row) {
                    return disagree("\(entry.path) changed")
                }
            }
        }
    }

    /// True when `entry` is the version `row` records, of its kind (and target).
    private func agrees(_ entry: RemoteEntry, with row: ItemRecord) -> Bool {
        guard entry.kind == row.kind, let listed = entry.etag, let known = row.remoteETag, listed.sameValue(as: known) else {
            return false
        }
        return row.kind != .symlink || entry.symlinkTarget == row.symlinkTarget
    }

    private mutating func disagree(_ reason: String) {
        if disagreement == nil { disagreement = reason }
    }
}
