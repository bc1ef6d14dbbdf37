import Foundation

/// Names that differ only in Unicode normalisation (`café` with a precomposed `é`, NFC, and
/// with `e` plus a combining accent, NFD) are two files on Linux and on most servers, but
/// one name to a person, to macOS and to most sync clients, and Swift's `String ==` calls
/// them equal. The server's names are not ours: both are kept byte for byte on both sides
/// and neither is ever renamed (another client, say the Mac that saved one of them, would
/// lose track of its file). `NormalisationClash` only finds them, so `status` can warn.
public enum NormalisationClash {
    /// The groups of sibling paths (two or more, distinct as bytes) whose names are
    /// canonically equivalent: each group in byte order, the groups in the order of their
    /// first path. Paths are compared by bytes, so a path given twice counts once.
    public static func twins<Paths: Sequence<RemotePath>>(among paths: Paths) -> [[RemotePath]] {
        // Only names with non-ASCII bytes can have another normalisation form, and they
        // are rare: everything else is passed over before any set is built. A name whose
        // characters all lie below U+0300 (UTF-8 bytes below 0xCC: ASCII, Latin-1, Latin
        // Extended) is in NFC, and nothing composes with them: two such names are
        // equivalent only when their bytes are equal. So a group of twins holds a name with
        // a byte of 0xCC or more, and only the folders holding one are grouped (`café` and
        // `Übersicht` in NFC, the usual case, cost no normalisation).
        var candidates: [RemotePath] = []
        var suspectFolders: Set<RemotePath> = []
        for path in paths where !path.isRoot && path.name.utf8.contains(where: { $0 >= 0x80 }) {
            candidates.append(path)
            if mayHaveTwins(path.name) { suspectFolders.insert(path.parent) }
        }
        guard !suspectFolders.isEmpty else { return [] }
        var groups: [Sibling: [RemotePath]] = [:]
        for path in candidates where suspectFolders.contains(path.parent) {
            // `Sibling` hashes and compares names as Swift strings: canonically equivalent
            // names fall into one group (paths compare by bytes).
            groups[Sibling(folder: path.parent, name: path.name), default: []].append(path)
        }
        // Almost every group holds one path (or one path given more than once): only groups
        // of two or more are made sets.
        return groups.values.filter { $0.count > 1 }.map { Set($0) }.filter { $0.count > 1 }.map { $0.sorted() }
            .sorted { $0[0] < $1[0] }
    }

    /// True when `name` holds a character at or above U+0300 (a UTF-8 byte of 0xCC or
    /// more): every group of twins holds such a name (see `twins(among:)`).
    static func mayHaveTwins(_ name: String) -> Bool {
        name.utf8.contains { $0 >= 0xCC }
    }

    /// A folder and a name in it, equal when the names are canonically equivalent.
    private struct Sibling: Hashable {
        var folder: RemotePath
        var name: String
    }
}
