import Foundation

/// Names that differ only in Unicode normalisation (`café` with a precomposed `é`, NFC, and
/// with `e` plus a combining accent, NFD) are two files on Linux and on Apache, but one
/// name to a person, to macOS and to most sync clients, and Swift's `String ==` calls them
/// equal. When a new remote item's name clashes so with a sibling, the new one is renamed
/// on the server with a marker, as Dropbox does for names that differ only in case:
/// `café (unicode conflict).txt`. Nothing is overwritten and each name stays unique under
/// any normalisation.
public enum NormalisationClash {
    /// A new remote item to rename before it is brought down.
    public struct Rename: Hashable, Sendable {
        public var from: RemotePath
        public var to: RemotePath
    }

    /// The renames that separate clashing names, deepest first (so a folder is renamed
    /// after what inside it is).
    ///
    /// In each folder, names are grouped by canonical equivalence. A group of one name is
    /// no clash. Names present locally or recorded in the state DB keep theirs; new remote
    /// names (on the server only) are renamed, except that when every name of the group is
    /// new, the NFC one (else the first in byte order) keeps its name.
    /// - Parameters:
    ///   - remote: what the remote walk saw.
    ///   - local: the paths the local side holds.
    ///   - recorded: the paths the state DB holds.
    public static func renames<Local: Collection<RemotePath>, Recorded: Collection<RemotePath>>(
        remote: [RemotePath: RemoteEntry], local: Local, recorded: Recorded) -> [Rename] {
        // Only names with non-ASCII bytes can have another normalisation form, and they are
        // rare: everything else is passed over before any set is built.
        func candidate(_ path: RemotePath) -> Bool { path.name.utf8.contains { $0 >= 0x80 } }
        let localCandidates = Set(local.filter(candidate)), recordedCandidates = Set(recorded.filter(candidate))
        var groups: [Sibling: Set<RemotePath>] = [:]
        for path in remote.keys.filter(candidate) + localCandidates + recordedCandidates where !path.isRoot {
            // `Sibling` hashes and compares names as Swift strings: canonically equivalent
            // names fall into one group (paths compare by bytes).
            groups[Sibling(folder: path.parent, name: path.name), default: []].insert(path)
        }
        var renames: [Rename] = []
        var taken: [RemotePath: Set<String>] = [:]
        for paths in groups.values where paths.count > 1 {
            let ordered = paths.sorted(by: <)
            let keepers = ordered.filter { localCandidates.contains($0) || recordedCandidates.contains($0) }
            let fresh = ordered.filter { !keepers.contains($0) }
            var renamed = fresh
            if keepers.isEmpty {
                let keep = fresh.first(where: isNFC) ?? fresh[0]
                renamed.removeAll { $0 == keep }
            }
            for path in renamed {
                let folder = path.parent
                if taken[folder] == nil {
                    // Every name in the folder on any side, as Swift strings (a name only
                    // canonically equivalent to one of them counts as taken too).
                    let all = Array(remote.keys) + Array(local) + Array(recorded)
                    taken[folder] = Set(all.filter { $0.parent == folder }.map(\.name))
                }
                let name = UnicodeConflictName.make(for: path.name, taken: taken[folder]!)
                taken[folder]!.insert(name)
                renames.append(Rename(from: path, to: folder.child(name)))
            }
        }
        return renames.sorted {
            $0.from.components.count != $1.from.components.count
                ? $0.from.components.count > $1.from.components.count : $0.from < $1.from
        }
    }

    /// True when `name` is in Normalization Form C.
    static func isNFC(_ path: RemotePath) -> Bool {
        path.name.utf8.elementsEqual(path.name.precomposedStringWithCanonicalMapping.utf8)
    }

    /// A folder and a name in it, equal when the names are canonically equivalent.
    private struct Sibling: Hashable {
        var folder: RemotePath
        var name: String
    }
}

/// The names `NormalisationClash` gives: the marker ` (unicode conflict)` before the last
/// extension, ` (unicode conflict 2)`, `3`… when taken.
public enum UnicodeConflictName {
    static let opening = " (unicode conflict"

    /// A name for `name` with the marker, not in `taken` (compared as Swift strings), at
    /// most 255 bytes.
    public static func make(for name: String, taken: Set<String>) -> String {
        let (stem, suffix) = ConflictName.split(name)
        var counter = 1
        while true {
            let tag = "\(opening)\(counter == 1 ? "" : " \(counter)"))\(suffix)"
            let candidate = ConflictName.fitted(stem, tag)
            if !taken.contains(candidate) { return candidate }
            counter += 1
        }
    }

    /// The name the marked `name` was made from, or nil when it carries no marker.
    public static func parse(_ name: String) -> String? {
        guard let open = name.range(of: opening, options: .backwards),
              let close = name[open.upperBound...].firstIndex(of: ")") else { return nil }
        let counter = name[open.upperBound..<close]
        guard counter.isEmpty || (counter.first == " " && Int(counter.dropFirst()).map { $0 >= 2 } == true) else { return nil }
        let base = String(name[..<open.lowerBound]) + String(name[name.index(after: close)...])
        return base.isEmpty ? nil : base
    }
}
