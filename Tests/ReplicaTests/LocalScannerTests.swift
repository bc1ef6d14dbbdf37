import Foundation
import Replica
import SyncEngine
import Testing
import TestSupport

@Suite("Local scanner")
final class LocalScannerTests {
    let root = temporaryPath("tidesync-scan-")
    deinit { try? FileManager.default.removeItem(atPath: root) }

    func make(_ relative: String, contents: String? = "x") throws {
        let path = root + "/" + relative
        if let contents {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
        } else {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
    }

    @Test("a nested tree is found with kinds, sizes and inodes; excluded names are not")
    func nestedTree() throws {
        try make("a/b/c/deep.txt", contents: "deep")
        try make("empty", contents: nil)
        try make("top.txt", contents: "12345")
        for junk in ["a/.~lock.doc#", "a/b/notes.txt~", ".tidesync-tmp-host-1-2", "a/4913", "x.part"] { try make(junk) }
        let exclude = ExcludeList(fileContents: "# editors\n*~\n.~lock.*#\n4913\n*.part\n")
        let scan = try LocalScanner(root: root, exclude: exclude).scan()
        let paths = Set(scan.entries.keys.map(\.description))
        #expect(paths == ["a", "a/b", "a/b/c", "a/b/c/deep.txt", "empty", "top.txt"])
        #expect(scan.entries[try RemotePath(string: "top.txt")]?.stat.size == 5)
        #expect(scan.entries[try RemotePath(string: "a/b")]?.kind == .folder)
        #expect(scan.entries.values.allSatisfy { $0.stat.inode != 0 })
    }

    @Test("a symlink is reported as a symlink and never followed out of the root")
    func symlinks() throws {
        try make("inside.txt")
        try FileManager.default.createSymbolicLink(atPath: root + "/escape", withDestinationPath: "/etc")
        let scan = try LocalScanner(root: root, exclude: ExcludeList(patterns: [])).scan()
        let link = scan.entries[try RemotePath(string: "escape")]
        #expect(link?.kind == .symlink && link?.symlinkTarget == "/etc")
        #expect(scan.entries.count == 2)
    }

    @Test("a missing sync folder is an error, never an empty tree")
    func missingRoot() {
        #expect(throws: ProviderError.self) { try LocalScanner(root: root + "/gone", exclude: ExcludeList(patterns: [])).scan() }
    }

    @Test("NFC and NFD names are two entries")
    func normalisation() throws {
        try make("caf\u{00E9}")
        try make("cafe\u{0301}")
        let scan = try LocalScanner(root: root, exclude: ExcludeList(patterns: [])).scan()
        #expect(scan.entries.count == 2)
    }

    @Test("exclude patterns with a slash match relative paths; built-ins always apply")
    func excludePatterns() {
        let list = ExcludeList(patterns: ["build/*.o", "*.tmp"])
        #expect(list.excludes(name: "x.o", relativePath: "build/x.o"))
        #expect(!list.excludes(name: "x.o", relativePath: "src/x.o"))
        #expect(list.excludes(name: "a.tmp", relativePath: "deep/a.tmp"))
        #expect(list.excludes(name: ".tidesync-tmp-1", relativePath: ".tidesync-tmp-1"))
        #expect(!list.excludes(name: "report.pdf", relativePath: "report.pdf"))
        #expect(list.excludes(try! RemotePath(string: "build/x.o")), "a path pattern, by path")
        #expect(list.excludes(try! RemotePath(string: "cache.tmp/inside/f")), "below an excluded folder")
        #expect(!list.excludes(try! RemotePath(string: "src/x.o")))
    }
}

@Suite("the default exclude list")
struct DefaultExcludeListTests {
    @Test("the built-in default list is config/exclude.default, pattern for pattern")
    func matchesShippedFile() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("config/exclude.default")
        let shipped = ExcludeList(fileContents: try String(contentsOf: file, encoding: .utf8))
        #expect(shipped == ExcludeList(patterns: ExcludeList.defaultPatterns))
    }

    @Test("editor and office temporaries are excluded, ordinary names are not")
    func typicalNames() {
        let list = ExcludeList(patterns: ExcludeList.defaultPatterns)
        for name in ["a.txt~", ".a.txt.swp", "4913", ".~lock.report.odt#", "~$report.docx", "x.part",
                     ".goutputstream-ABC", ".tidesync-part-1"] {
            #expect(list.excludes(name: name, relativePath: name), "\(name)")
        }
        for name in ["report.odt", "notes.txt", "4914", "lock"] {
            #expect(!list.excludes(name: name, relativePath: name), "\(name)")
        }
    }
}
