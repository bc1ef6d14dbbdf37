import Foundation
import Replica
import SyncEngine
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The replica's side of bundles: hashing, the bundle stat, watcher events under a bundle.
@Suite struct BundleReplicaTests {
    func p(_ s: String) -> RemotePath { try! RemotePath(string: s) }

    @Test func sha256MatchesTheStandardVectors() {
        func hex(_ text: String) -> String { var h = ContentDigest(.sha256); h.update(Array(text.utf8)); return h.hex() }
        #expect(hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        var million = ContentDigest(.sha256)
        let chunk = [UInt8](repeating: 0x61, count: 1000)
        for _ in 0..<1000 { million.update(chunk) }
        #expect(million.hex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func theBundleStatChangesWithAnyMemberAndNotWithARenameOfTheBundle() throws {
        let root = temporaryPath("tidesync-bundle-")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/A.app/Contents", withIntermediateDirectories: true)
        try Data("one".utf8).write(to: URL(fileURLWithPath: root + "/A.app/Contents/x"))
        func scan(_ name: String = "A.app") throws -> LocalBundle { try #require(LocalBundle.scan(at: root + "/" + name, path: p(name))) }
        let first = try scan()
        #expect(first.members.map(\.relativePath) == ["Contents", "Contents/x"])
        #expect(first.stat.size == 3)
        #expect(try scan().stat == first.stat)
        try Data("two".utf8).write(to: URL(fileURLWithPath: root + "/A.app/Contents/.tidesync-part-1"))
        #expect(try scan().stat == first.stat, "tidesync's own temporaries are not members")
        try FileManager.default.removeItem(atPath: root + "/A.app/Contents/.tidesync-part-1")
        #expect(rename(root + "/A.app", root + "/B.app") == 0)
        #expect(try scan("B.app").stat == first.stat, "renaming the bundle changes nothing inside")
        try Data("onf".utf8).write(to: URL(fileURLWithPath: root + "/B.app/Contents/x"))
        let rewritten = try scan("B.app")
        #expect(rewritten.stat != first.stat, "same size, rewritten")
        let manifest = try rewritten.manifest(root: root + "/B.app", previous: [])
        #expect(manifest.first { $0.relativePath == "Contents/x" }?.contentHash
                == "sha256:" + { var h = ContentDigest(.sha256); h.update(Array("onf".utf8)); return h.hex() }())
    }

    @Test func watcherEventsInsideABundleAreChangesOfTheBundle() {
        let rule = BundleRule.standard
        #expect(WatchEvent.changed(p("d/A.app/Contents/x")).mapped(by: rule) == [.changed(p("d/A.app"))])
        #expect(WatchEvent.folderAppeared(p("d/A.app/Contents")).mapped(by: rule) == [.changed(p("d/A.app"))])
        #expect(WatchEvent.changed(p("d/A.app")).mapped(by: rule) == [.changed(p("d/A.app"))])
        #expect(WatchEvent.changed(p("d/x")).mapped(by: rule) == [.changed(p("d/x"))])
        #expect(WatchEvent.unwatched(p("d/A.app/Contents"), errno: 28).mapped(by: rule) == [.unwatched(p("d/A.app"), errno: 28)],
                "still rescanned, as the bundle")
        #expect(WatchEvent.moved(from: p("A.app/tmp"), to: p("A.app/x"), isFolder: false).mapped(by: rule)
                == [.changed(p("A.app")), .changed(p("A.app"))])
        #expect(WatchEvent.moved(from: p("A.app/x"), to: p("x"), isFolder: false).mapped(by: rule)
                == [.changed(p("A.app")), .changed(p("x"))])
        #expect(WatchEvent.moved(from: p("A.app"), to: p("B.app"), isFolder: true).mapped(by: rule)
                == [.moved(from: p("A.app"), to: p("B.app"), isFolder: true)])
    }
}
