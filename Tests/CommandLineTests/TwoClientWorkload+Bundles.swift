import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Bundles in the two-client workload: `Deck.key`-like folders that sync as one item. Each
/// bundle version is a tag written into every member, so a bundle whose members hold two
/// tags is a mix — which must never exist, on the server or on either client.
extension Workload {
    static let bundleMembers = ["Index.xml", "Data/a.txt", "Data/b.txt"]
    static let bundleExtensions = ["key", "rtfd"]

    static func isBundle(name: String) -> Bool {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return false }
        return bundleExtensions.contains(name[name.index(after: dot)...].lowercased())
    }

    /// A member's text: its bundle version's tag and its index (and, with `uniqueSizes`, as
    /// many `~` as the tag's operation number).
    func memberText(_ tag: String, _ index: Int) -> String {
        guard uniqueSizes, let operation = tag.split(separator: " ").last.flatMap({ Int($0) }) else { return "\(tag) member \(index)\n" }
        return "\(tag) member \(index)\(String(repeating: "~", count: operation))\n"
    }

    mutating func bundleTag(_ client: TwoClientPeer) -> String {
        counter += 1
        return "bundle seed \(seed) client \(client.name) op \(counter)"
    }

    /// The bundle folders below `root` (relative paths), anywhere in the tree.
    static func bundles(_ root: String) -> [String] {
        var result: [String] = []
        var pending = [""]
        while let folder = pending.popLast() {
            let absolute = folder.isEmpty ? root : root + "/" + folder
            for name in ((try? FileManager.default.contentsOfDirectory(atPath: absolute)) ?? []).sorted() where !name.hasPrefix(".") {
                let relative = folder.isEmpty ? name : folder + "/" + name
                var st = stat()
                guard lstat(absolute + "/" + name, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else { continue }
                if isBundle(name: name) { result.append(relative) } else { pending.append(relative) }
            }
        }
        return result.sorted()
    }

    /// The tag every member of the bundle at `path` holds, or nil when they disagree or one
    /// is missing (a bundle mid-way through a rewrite by this same test cannot be seen
    /// here: each rewrite runs to its end before the next operation).
    static func tag(ofBundleAt path: String) -> String? {
        var tags: Set<String> = []
        for (index, member) in bundleMembers.enumerated() {
            guard let text = try? String(contentsOfFile: path + "/" + member, encoding: .utf8),
                  let range = text.range(of: " member \(index)\n"), range.upperBound == text.endIndex else { return nil }
            tags.insert(String(text[..<range.lowerBound]))
        }
        return tags.count == 1 ? tags.first : nil
    }

    mutating func createBundle(_ client: TwoClientPeer, at relative: String) throws {
        let root = client.local + "/" + relative
        guard mkdir(root, 0o755) == 0, mkdir(root + "/Data", 0o755) == 0 else { return }
        let tag = bundleTag(client)
        for (index, member) in Self.bundleMembers.enumerated() {
            do {
                try Data(memberText(tag, index).utf8).write(to: URL(fileURLWithPath: root + "/" + member))
            } catch where access(root, F_OK) != 0 {  // the folder is gone from here, not the disk full
                abandonedBundles.insert(tag)
                note("\(client.name) could not finish the bundle \(relative) (\(tag)): its folder was moved away")
                return
            }
        }
        liveBundles.insert(tag)
        note("\(client.name) created the bundle \(relative) (\(tag))")
    }

    /// One random bundle operation: mostly rewrites of every member in place (as an app
    /// saving a document package), some renames, deletes and new bundles.
    mutating func bundleStep(_ client: TwoClientPeer) throws {
        let bundles = Self.bundles(client.local)
        let folders = Self.list(client.local, folders: true)
        let choice = random.next(10)
        guard let bundle = random.pick(bundles), choice < 9 else {
            let parent = random.pick(folders + [""]) ?? ""
            return try createBundle(client, at: (parent.isEmpty ? "" : parent + "/") + "new-\(client.name)\(counter + 1).key")
        }
        let path = client.local + "/" + bundle
        switch choice {
        case 0..<6: try rewriteBundle(client, bundle)
        case 6..<8:
            counter += 1
            let parent = random.pick(folders + [""]) ?? ""
            let to = (parent.isEmpty ? "" : parent + "/") + "mv-\(client.name)\(counter).key"
            if rename(path, client.local + "/" + to) == 0 { note("\(client.name) renamed the bundle \(bundle) to \(to)") }
        default:
            // Seen first, then taken away in one rename; if what was taken is not what was
            // seen (the daemon put a newer version in meanwhile), it is put back.
            guard let seen = Self.tag(ofBundleAt: path) else { return }
            let trash = client.home + "/trash-\(counter)"  // out of the sync folder: a delete
            guard rename(path, trash) == 0 else { return }
            guard Self.tag(ofBundleAt: trash) == seen else {
                _ = rename(trash, path)
                return
            }
            try? FileManager.default.removeItem(atPath: trash)
            retireBundle(seen, by: "\(client.name) deleted the bundle \(bundle)")
            note("\(client.name) deleted the bundle \(bundle)")
        }
    }

    /// Rewrites every member with a new tag, after reading the old one. Counted as written
    /// only if every member's write landed in the bundle that is at the path afterwards.
    mutating func rewriteBundle(_ client: TwoClientPeer, _ bundle: String) throws {
        let path = client.local + "/" + bundle
        guard let old = Self.tag(ofBundleAt: path) else { return }
        let tag = bundleTag(client)
        var landed = true
        var met: Set<String> = [old, tag]  // every tag this rewrite read or wrote
        for (index, member) in Self.bundleMembers.enumerated() {
            let fd = open(path + "/" + member, O_RDWR)
            guard fd >= 0 else { landed = false; continue }
            defer { close(fd) }
            let before = Self.read(fd)
            if let seen = before.flatMap(TwoClientSettings.bundleTag(of:)) { met.insert(seen) }
            guard ftruncate(fd, 0) == 0, Self.write(fd, memberText(tag, index)) else { landed = false; continue }
            if before != memberText(old, index) || !Self.sameFile(fd, path + "/" + member) { landed = false }
        }
        guard landed, Self.tag(ofBundleAt: path) == tag else {
            // The daemon may have moved the bundle away between two members (a conflict
            // copy, a download in its place): what this rewrite left where it went, and in
            // what took its place, is a mix of the tags it met, made here, not by a sync.
            for member in Self.bundleMembers {
                if let text = try? String(contentsOfFile: path + "/" + member, encoding: .utf8),
                   let seen = TwoClientSettings.bundleTag(of: text) { met.insert(seen) }
            }
            cutRewrites.append((tag, met))
            note("\(client.name) rewrote the bundle \(bundle) while it changed under it; not counted")
            return
        }
        retireBundle(old, by: "\(client.name) rewrote the bundle \(bundle)")
        overwrittenBundles.insert(old)
        liveBundles.insert(tag)
        note("\(client.name) rewrote the bundle \(bundle) (\(tag))")
    }

    /// The bundle a note names ("B rewrote the bundle docs/Notes.rtfd (tag)" → "docs/Notes.rtfd").
    static func bundlePath(inNote note: String) -> String? {
        guard let start = note.range(of: " the bundle "), let end = note.range(of: " (bundle ", options: .backwards),
              start.upperBound <= end.lowerBound else { return nil }
        return String(note[start.upperBound..<end.lowerBound])
    }

    mutating func retireBundle(_ tag: String, by what: String) {
        if liveBundles.remove(tag) != nil { note("  \(tag) retired: \(what)") }
    }
}
