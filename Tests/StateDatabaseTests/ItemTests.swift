import Foundation
@testable import StateDatabase
import SyncEngine
import SyncModel
import Testing

/// Items: round trips, byte-exact names, collisions, removal, ordering and lookups.
@Suite struct ItemTests {
    @Test func upsertAndGetRoundTripEveryField() throws {
        try withStateDatabase { database in
            let full = ItemRecord(
                id: ItemIdentifier(UUID().uuidString), parentID: .root, name: "report.pdf", kind: .file,
                size: 1_234_567_890_123, remoteETag: ETag(value: "5f-abc", isWeak: true),
                remoteFileID: "00012345ocabc", symlinkTarget: "../elsewhere",
                contentHash: "sha256:" + String(repeating: "ab", count: 32),
                local: LocalStat(inode: UInt64.max - 41, size: 1_234_567_890_123,
                                 modificationTimeNanoseconds: 1_790_000_000_123_456_789,
                                 birthNanoseconds: 1_780_000_000_987_654_321),
                materialization: .partial, pinState: .pinned)
            let bare = ItemRecord(id: ItemIdentifier(UUID().uuidString), parentID: .root, name: "bare",
                                  kind: .symlink, materialization: .dataless, pinState: .unpinned)
            let bundle = ItemRecord(id: ItemIdentifier(UUID().uuidString), parentID: .root, name: "Slides.key",
                                    kind: .bundle, remoteETag: ETag(value: "strong"),
                                    local: LocalStat(inode: 12, size: 0, modificationTimeNanoseconds: -5))
            #expect(full.local!.inode > UInt64(Int64.max) / 2)

            try database.apply([.upsert(full), .upsert(bare), .upsert(bundle)])

            #expect(try database.item(full.id) == full)
            // `==` lets an unknown birth time match any: compare it by itself.
            #expect(try database.item(full.id)?.local?.birthNanoseconds == 1_780_000_000_987_654_321)
            #expect(try database.item(bare.id) == bare)
            #expect(try database.item(bundle.id) == bundle)
            #expect(try database.item(full.id)?.remoteETag?.isWeak == true)
            #expect(try database.item(ItemIdentifier("absent")) == nil)
        }
    }

    @Test func aBirthTimeIsSetOnlyOnARowWithoutOneThatStillHasTheStat() throws {
        try withStateDatabase { database in
            var row = file("old.txt")
            row.local = LocalStat(inode: 7, size: 3, modificationTimeNanoseconds: 1_000)
            var other = file("other.txt")
            other.local = LocalStat(inode: 8, size: 3, modificationTimeNanoseconds: 1_000, birthNanoseconds: 5)
            try database.apply([.upsert(row), .upsert(other)])
            let born = LocalStat(inode: 7, size: 3, modificationTimeNanoseconds: 1_000, birthNanoseconds: 42)
            // Another shape (the file changed since it was seen): left alone.
            try database.apply([.setLocalBirth(row.id, LocalStat(inode: 7, size: 4, modificationTimeNanoseconds: 1_000, birthNanoseconds: 42))])
            #expect(try database.item(row.id)?.local?.birthNanoseconds == 0)
            try database.apply([.setLocalBirth(row.id, born)])
            #expect(try database.item(row.id)?.local?.birthNanoseconds == 42)
            // A row that has one keeps it.
            try database.apply([.setLocalBirth(other.id, LocalStat(inode: 8, size: 3, modificationTimeNanoseconds: 1_000, birthNanoseconds: 9))])
            #expect(try database.item(other.id)?.local?.birthNanoseconds == 5)
        }
    }

    @Test func upsertOfAnExistingItemReplacesEveryField() throws {
        try withStateDatabase { database in
            let original = file("draft.txt")
            let target = folder("Archive")
            var moved = original
            moved.parentID = target.id
            moved.name = "final.txt"
            moved.remoteETag = ETag(value: "v2")
            moved.local = LocalStat(inode: 99, size: 3, modificationTimeNanoseconds: 7)
            try database.apply([.upsert(original), .upsert(target)])
            try database.apply([.upsert(moved)])

            #expect(try database.item(original.id) == moved)
            #expect(try database.children(of: .root).map(\.id) == [target.id])
            moved.local = nil
            moved.remoteETag = nil
            try database.apply([.upsert(moved)])
            #expect(try database.item(original.id) == moved)
        }
    }

    @Test func namesAreStoredAndComparedByteExact() throws {
        try withStateDatabase { database in
            let nfc = file("caf\u{E9}.txt")
            let nfd = file("cafe\u{301}.txt")
            let longest = file(String(repeating: "\u{E9}", count: 127) + "x")  // 255 bytes of UTF-8
            let odd = ["it's \"quoted\"", "100%_done", "line\nbreak", "tab\there", "back\\slash", "🙂 emoji"]
                .map { file($0) }
            #expect(Array(nfc.name.utf8) != Array(nfd.name.utf8))
            #expect(longest.name.utf8.count == 255)

            try database.apply(([nfc, nfd, longest] + odd).map(StateChange.upsert))

            #expect(try database.item(parent: .root, name: nfc.name)?.id == nfc.id)
            #expect(try database.item(parent: .root, name: nfd.name)?.id == nfd.id)
            #expect(try database.item(parent: .root, name: "CAF\u{C9}.txt") == nil)
            for item in [nfc, nfd, longest] + odd {
                let stored = try #require(try database.item(item.id))
                #expect(Array(stored.name.utf8) == Array(item.name.utf8))
                #expect(try database.item(parent: .root, name: item.name)?.id == item.id)
            }
            let names = try database.children(of: .root).map { Array($0.name.utf8) }
            #expect(names.count == 9)
            #expect(names == names.sorted { $0.lexicographicallyPrecedes($1) })
        }
    }

    @Test func aNameTakenInTheParentIsAFilenameCollisionAndRollsBackTheBatch() throws {
        try withStateDatabase { database in
            let holder = file("taken.txt")
            try database.apply([.upsert(holder), .setSyncAnchor(SyncAnchor("a1"))])
            let earlier = file("new.txt")
            let intruder = file("taken.txt")

            let error = #expect(throws: ProviderError.self) {
                try database.apply([.upsert(earlier), .setSyncAnchor(SyncAnchor("a2")), .upsert(intruder)])
            }
            #expect(error?.code == .filenameCollision)
            #expect(error?.message.contains(holder.id.rawValue) == true)
            #expect(try database.item(earlier.id) == nil)
            #expect(try database.item(intruder.id) == nil)
            #expect(try database.syncAnchor() == SyncAnchor("a1"))
            #expect(try database.allItems().map(\.id) == [.root, holder.id])
        }
    }

    @Test func anItemWhoseParentIsNotRecordedIsParentMissing() throws {
        try withStateDatabase { database throws in
            let orphan = file("orphan.txt", in: ItemIdentifier("no-such-folder"))
            let error = #expect(throws: ProviderError.self) { try database.apply([.upsert(orphan)]) }
            #expect(error?.code == .parentMissing)
            #expect(try database.item(orphan.id) == nil)
        }
    }

    @Test func aMoveIntoTheItemsOwnSubtreeIsRefused() throws {
        try withStateDatabase { database in
            let top = folder("top")
            let middle = folder("middle", in: top.id)
            let bottom = folder("bottom", in: middle.id)
            try database.apply([.upsert(top), .upsert(middle), .upsert(bottom)])

            var looping = top
            looping.parentID = bottom.id
            var selfParent = file("self")
            selfParent.parentID = selfParent.id
            for item in [looping, selfParent] {
                let error = #expect(throws: ProviderError.self) { try database.apply([.upsert(item)]) }
                #expect(error?.code == .cannotSynchronize)
            }
            #expect(try database.allItems().map(\.id) == [.root, top.id, middle.id, bottom.id])
        }
    }

    @Test func removingAFolderRemovesItsSubtreeAndTheirRanges() throws {
        try withStateDatabase { database in
            let doomed = folder("doomed")
            let inner = folder("inner", in: doomed.id)
            let deep = file("deep.bin", in: inner.id)
            let shallow = file("shallow.bin", in: doomed.id)
            let survivor = file("survivor.bin")
            let someBytes = RangeSet([ByteRange(offset: 0, length: 4096)])
            try database.apply([.upsert(doomed), .upsert(inner), .upsert(deep), .upsert(shallow), .upsert(survivor),
                                .setHydratedRanges(deep.id, someBytes, version: ETag(value: "d")),
                                .setHydratedRanges(survivor.id, someBytes, version: ETag(value: "s"))])
            try Self.addBundleMember(to: shallow.id, in: database)
            let journaled = try database.journal(operation("upload", for: deep.id))

            try database.apply([.remove(doomed.id)])

            #expect(try database.allItems().map(\.id) == [.root, survivor.id])
            #expect(try database.count("SELECT count(*) FROM hydrated_range") == 1)
            #expect(try database.count("SELECT count(*) FROM bundle_member") == 0)
            #expect(try database.hydratedRanges(of: deep.id).ranges == RangeSet())
            #expect(try database.hydratedRanges(of: survivor.id).ranges == someBytes)
            // Journal entries outlive their item's row (see `apply`).
            #expect(try database.pendingOperations().map(\.id) == [journaled])
            try database.apply([.remove(doomed.id)])  // removing it again changes nothing
        }
    }

    @Test func removingTheRootIsRefused() throws {
        try withStateDatabase { database in
            let child = file("child")
            try database.apply([.upsert(child)])
            let error = #expect(throws: ProviderError.self) { try database.apply([.remove(.root)]) }
            #expect(error?.code == .cannotSynchronize)
            #expect(try database.allItems().map(\.id) == [.root, child.id])
        }
    }

    @Test func allItemsListsParentsBeforeChildren() throws {
        try withStateDatabase { database in
            // Created flat in reverse order, then moved into a chain, so neither insertion
            // order nor identifier order is tree order.
            let grandchild = folder("c", id: "1-grandchild")
            let child = folder("b", id: "2-child")
            let parent = folder("a", id: "3-parent")
            let leaf = file("z", in: .root, id: "0-leaf")
            try database.apply([.upsert(grandchild), .upsert(child), .upsert(parent), .upsert(leaf)])
            var movedChild = child, movedGrandchild = grandchild, movedLeaf = leaf
            movedChild.parentID = parent.id
            movedGrandchild.parentID = child.id
            movedLeaf.parentID = grandchild.id
            try database.apply([.upsert(movedChild), .upsert(movedGrandchild), .upsert(movedLeaf)])

            let order = try database.allItems().map(\.id)
            #expect(order == [.root, parent.id, child.id, grandchild.id, leaf.id])
        }
    }

    @Test func itemsAreFoundByLocalInodeAndByRemoteFileID() throws {
        try withStateDatabase { database in
            var big = file("big-inode")
            big.local = LocalStat(inode: UInt64.max, size: 1, modificationTimeNanoseconds: 1)
            big.remoteFileID = "oc-77"
            var small = file("small-inode")
            small.local = LocalStat(inode: 77, size: 1, modificationTimeNanoseconds: 1)
            small.remoteFileID = "77"
            try database.apply([.upsert(big), .upsert(small)])

            #expect(try database.item(localInode: UInt64.max)?.id == big.id)
            #expect(try database.item(localInode: 77)?.id == small.id)
            #expect(try database.item(localInode: 78) == nil)
            #expect(try database.item(remoteFileID: "oc-77")?.id == big.id)
            #expect(try database.item(remoteFileID: "77")?.id == small.id)
            #expect(try database.item(remoteFileID: "78") == nil)
        }
    }

    /// Bundle members have no API yet (the bundles work adds it); the test writes one directly.
    private static func addBundleMember(to bundle: ItemIdentifier, in database: StateDatabase) throws {
        _ = try database.executeOnWriter("""
            INSERT INTO bundle_member (bundle_id, relative_path, kind, size) VALUES ('\(bundle.rawValue)', 'Contents/Info.plist', 'file', 10)
            """)
    }
}
