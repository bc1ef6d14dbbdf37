import Foundation
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The random operations and what they did to versions. A version is a unique content
/// string; it is *live* from its write until a client that had it in front of it
/// overwrote or deleted it.
struct Workload {
    let seed: UInt64
    /// True where a version is a time in seconds and a size (nginx, WsgiDAV): two writes of
    /// one size within a second are one version there (README, "Server compatibility"), so
    /// every version gets a size of its own and the test looks for tidesync's faults.
    let uniqueSizes: Bool
    var random: SeededRandom
    var counter = 0
    private(set) var live: Set<String> = []
    /// Every version any client wrote.
    private(set) var written: Set<String> = []
    /// Versions a client overwrote with a new one after reading them.
    private(set) var overwritten: Set<String> = []
    private(set) var log: [String] = []
    private var events: [String: [String]] = [:]
    /// Bundle versions (tags) not yet retired by the client that had them in front of it.
    var liveBundles: Set<String> = []
    /// Bundle versions a client rewrote after reading them.
    var overwrittenBundles: Set<String> = []
    /// Bundles whose creation was cut short: the daemon moved their folder away (the other
    /// client moved it) between the bundle's mkdir and its last member. What was written
    /// syncs as it is, an incomplete document, as it would for any program.
    var abandonedBundles: Set<String> = []
    /// The tags each rewrite cut short met (read or wrote): the bundle changed under it,
    /// so it may have left a mix of them, made by this test as any program could.
    var cutRewrites: [(tag: String, met: Set<String>)] = []

    init(seed: UInt64, uniqueSizes: Bool = false) {
        self.seed = seed
        self.uniqueSizes = uniqueSizes
        random = SeededRandom(spreading: seed)
    }

    func history(of version: String) -> [String] { events[version] ?? [] }

    /// The path an event of `history(of:)` names ("A wrote docs/x.txt" → "docs/x.txt").
    static func path(inEvent event: String) -> String? {
        for verb in [" wrote ", " created ", " overwrote ", " deleted "] {
            if let range = event.range(of: verb) { return String(event[range.upperBound...]) }
        }
        return nil
    }

    mutating func content(_ client: TwoClientPeer) -> String {
        counter += 1
        // Unique, and of varied sizes (some equal, so same-size edits are compared).
        let draw = random.next(4)
        let padding = String(repeating: "~", count: uniqueSizes ? counter : draw * 8)
        return "seed \(seed) client \(client.name) op \(counter)\(padding)\n"
    }

    /// A few folders and files on the first client.
    mutating func seed(_ client: TwoClientPeer) throws {
        for folder in ["docs", "docs/old", "photos", "music"] {
            try FileManager.default.createDirectory(atPath: client.local + "/" + folder, withIntermediateDirectories: true)
        }
        for (index, folder) in ["", "docs", "docs/old", "photos", "music", "docs", "photos", ""].enumerated() {
            try create(client, in: folder, name: "start\(index).txt")
        }
        try createBundle(client, at: "Deck.key")
        try createBundle(client, at: "docs/Notes.rtfd")
    }

    /// One random operation on `client`'s folder as it is now.
    mutating func step(_ client: TwoClientPeer) throws {
        if random.next(100) < 10 { return try bundleStep(client) }
        let files = Self.list(client.local, folders: false)
        let folders = Self.list(client.local, folders: true)
        switch random.next(100) {
        case 0..<35:
            // Half the edits go to a few hot files, so both clients often edit one file at once.
            let hot = random.next(2) == 0 ? Array(files.prefix(3)) : files
            if let file = random.pick(hot) { try edit(client, file) } else { try create(client, in: "", name: nil) }
        case 35..<60:
            try create(client, in: random.pick(folders + [""]) ?? "", name: nil)
        case 60..<75:
            if let file = random.pick(files) {
                counter += 1
                let target = (random.pick(folders + [""]) ?? "")
                let to = (target.isEmpty ? "" : target + "/") + "mv-\(client.name)\(counter).txt"
                if rename(client.local + "/" + file, client.local + "/" + to) == 0 { note("\(client.name) renamed \(file) to \(to)") }
            }
        case 75..<85:
            if let file = random.pick(files) { try remove(client, file) }
        case 85..<93:
            if let folder = random.pick(folders) {
                counter += 1
                let others = folders.filter { $0 != folder && !$0.hasPrefix(folder + "/") }
                let into = random.next(2) == 0 ? "" : (random.pick(others) ?? "")
                let to = (into.isEmpty ? "" : into + "/") + "dir-\(client.name)\(counter)"
                if rename(client.local + "/" + folder, client.local + "/" + to) == 0 { note("\(client.name) moved the folder \(folder) to \(to)") }
            }
        case 93..<97:
            counter += 1
            let parent = random.pick(folders + [""]) ?? ""
            let path = (parent.isEmpty ? "" : parent + "/") + "new-\(client.name)\(counter)"
            try FileManager.default.createDirectory(atPath: client.local + "/" + path, withIntermediateDirectories: true)
            note("\(client.name) made the folder \(path)")
        default:
            if let folder = random.pick(folders) { try removeFolder(client, folder) }
        }
    }

    mutating func note(_ text: String) { log.append(text) }

    mutating func create(_ client: TwoClientPeer, in folder: String, name: String?) throws {
        let text = content(client)
        let file = (folder.isEmpty ? "" : folder + "/") + (name ?? "new-\(client.name)\(counter).txt")
        let fd = open(client.local + "/" + file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }  // the folder went away meanwhile
        defer { close(fd) }
        guard Self.write(fd, text) else { return }
        live.insert(text)
        written.insert(text)
        events[text, default: []].append("\(client.name) created \(file)")
        note("\(client.name) created \(file)")
    }

    /// Overwrites a file with a new version, after reading what it held through the same
    /// descriptor: that version was seen, so it may go.
    mutating func edit(_ client: TwoClientPeer, _ file: String) throws {
        let path = client.local + "/" + file
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let old = Self.read(fd)
        let text = content(client)
        guard ftruncate(fd, 0) == 0, Self.write(fd, text, at: 0) else { return }
        // Even when `path` no longer names the file now (tidesync was putting a download in
        // its place, or moving it for the other client's move), the write counts: the file
        // it went into held the old version (read, then truncated: the user replaced it), and
        // tidesync must bring it back (a file open for writing is exchanged back, a moved one
        // keeps its bytes). Counting it as "went nowhere" left the old version live and the
        // new one unknown: a loss and a "no client wrote" that never happened (seed 31337).
        if !Self.sameFile(fd, path) { note("\(client.name)'s edit of \(file) went into the file while it was replaced or moved") }
        if let old {
            retire(old, by: "\(client.name) overwrote \(file)")
            overwritten.insert(old)
        }
        live.insert(text)
        written.insert(text)
        events[text, default: []].append("\(client.name) wrote \(file)")
        note("\(client.name) edited \(file)")
    }

    mutating func remove(_ client: TwoClientPeer, _ file: String) throws {
        let path = client.local + "/" + file
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let old = Self.read(fd)
        guard Self.sameFile(fd, path), unlink(path) == 0 else { return }
        if let old { retire(old, by: "\(client.name) deleted \(file)") }
        note("\(client.name) deleted \(file)")
    }

    /// Deletes the files it sees in the folder one by one, then the folders that are
    /// empty: what arrives meanwhile is not deleted unseen.
    mutating func removeFolder(_ client: TwoClientPeer, _ folder: String) throws {
        let files = Self.list(client.local + "/" + folder, folders: false)
        for file in files { try remove(client, folder + "/" + file) }
        let folders = Self.list(client.local + "/" + folder, folders: true).sorted { $0.count > $1.count }
        for inner in folders { rmdir(client.local + "/" + folder + "/" + inner) }
        if rmdir(client.local + "/" + folder) == 0 { note("\(client.name) deleted the folder \(folder)") }
    }

    mutating func retire(_ version: String, by what: String) {
        if live.remove(version) != nil { events[version, default: []].append(what) }
    }

    /// Relative paths of the files (or folders) below `root`, leaving out tidesync's own
    /// and bundles (which only `bundleStep` touches, as whole documents).
    static func list(_ root: String, folders: Bool) -> [String] {
        var result: [String] = []
        var pending = [""]
        while let folder = pending.popLast() {
            let absolute = folder.isEmpty ? root : root + "/" + folder
            for name in ((try? FileManager.default.contentsOfDirectory(atPath: absolute)) ?? []).sorted()
            where !name.hasPrefix(".") && !isBundle(name: name) {
                let relative = folder.isEmpty ? name : folder + "/" + name
                var st = stat()
                guard lstat(absolute + "/" + name, &st) == 0 else { continue }
                let isFolder = st.st_mode & S_IFMT == S_IFDIR
                if isFolder { pending.append(relative) }
                if isFolder == folders { result.append(relative) }
            }
        }
        return result.sorted()
    }

    static func read(_ fd: Int32) -> String? {
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        var offset: off_t = 0
        while true {
            let count = pread(fd, &buffer, buffer.count, offset)
            if count < 0 { return nil }
            if count == 0 { break }
            data += buffer.prefix(count)
            offset += off_t(count)
        }
        return String(decoding: data, as: UTF8.self)
    }

    static func write(_ fd: Int32, _ text: String, at offset: off_t = 0) -> Bool {
        let bytes = Array(text.utf8)
        return pwrite(fd, bytes, bytes.count, offset) == bytes.count
    }

    /// True when `path` still names the file open as `fd`.
    static func sameFile(_ fd: Int32, _ path: String) -> Bool {
        var open = stat(), named = stat()
        return fstat(fd, &open) == 0 && lstat(path, &named) == 0 && open.st_ino == named.st_ino
    }
}
