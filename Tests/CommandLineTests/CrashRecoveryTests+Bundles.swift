import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `kill -9` of the real daemon while a bundle goes to the server.
extension CrashRecoveryTests {
    /// A bundle of 3 levels: `count` small members and one big member (so the upload takes
    /// a while), written with `tag` in every member.
    func makeBundle(_ root: String, count: Int, tag: String, bigMegabytes: Int) async throws {
        for index in 0..<count {
            let folder = root + "/Contents" + ["", "/Resources", "/Resources/en.lproj"][index % 3]
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try Data("\(tag) \(index) \(String(repeating: "b", count: 3000))".utf8).write(to: URL(fileURLWithPath: folder + "/m\(index).txt"))
        }
        try await Self.makeBigFile(root + "/Contents/Resources/big.bin", megabytes: bigMegabytes)
        if tag != "v1" { try Data(tag.utf8).write(to: URL(fileURLWithPath: root + "/Contents/Resources/big.bin"), options: []) }
    }

    /// The bundle below `root` on the server's disk, or nil when it is not there.
    func remoteBundle(_ name: String) async -> [String: String]? {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: remoteDisk + "/" + name, isDirectory: &isDirectory), isDirectory.boolValue else { return nil }
        return await Self.tree(remoteDisk + "/" + name)
    }

    /// Scratch collections of bundle writes on the server.
    func remoteScratch() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: remoteDisk)) ?? []).filter { $0.hasPrefix(".tidesync-bundle-") }
    }

    @Test("kill -9 during a bundle's first upload: nothing of it on the server, no scratch after the restart",
          arguments: Remote.available)
    func killDuringBundleUpload(remote: Remote) async throws {
        try configure(remote)
        try await makeBundle(local + "/Big.app", count: 600, tag: "v1", bigMegabytes: 60)
        let before = await Self.tree(local)
        let daemon = try start()
        // Counts names only: reading every member's bytes (60 MiB) at each look took longer
        // than the whole upload on a local directory, which then went by unseen (once, on a
        // fresh clone's first run).
        let caught = await waitOnOwnThread(for: daemon, timeout: .seconds(60)) { [self] in
            remoteScratch().contains { (FileManager.default.enumerator(atPath: remoteDisk + "/" + $0)?.allObjects.count ?? 0) > 100 }
        }
        await kill9(daemon)
        #expect(caught, "the bundle upload was never seen in progress")
        // The upload may have ended just before the kill: then the bundle is there whole.
        let seen = await remoteBundle("Big.app")
        let bundleHere = await Self.tree(local + "/Big.app"), here = await Self.tree(local)
        #expect(seen == nil || seen == bundleHere, "a half-uploaded bundle is visible under its name")
        #expect(here == before, "the local bundle was touched")
        try await expectConverged(before)
    }

    @Test("kill -9 at random moments of a bundle's replacement: the server holds the old or the new bundle whole",
          arguments: Remote.available)
    func killDuringBundleReplacement(remote: Remote) async throws {
        try configure(remote)
        let bundle = local + "/Deck.key"
        try await makeBundle(bundle, count: 300, tag: "v1", bigMegabytes: 60)
        let first = try await runToEnd()
        #expect(first.status == 0, "\(first.errors.suffix(1000))")
        let old = await Self.tree(bundle)
        #expect(await remoteBundle("Deck.key") == old)
        try FileManager.default.removeItem(atPath: bundle)
        try await makeBundle(bundle, count: 300, tag: "v2", bigMegabytes: 60)
        let new = await Self.tree(bundle)
        let expected = await Self.tree(local)
        var generator = SeededRandom(seed: 5_2026_11_23)
        for round in 0..<4 {
            let daemon = try start()
            let pause = UInt64.random(in: 100...700, using: &generator) * UInt64(round + 1)
            try await Task.sleep(for: .milliseconds(pause))
            await kill9(daemon)
            let seen = await remoteBundle("Deck.key")
            print("bundle replacement, kill -9 round \(round) after \(pause) ms (\(remote)): server holds \(seen == nil ? "none (set aside)" : seen == old ? "old" : seen == new ? "new" : "a MIX")")
            if seen == nil {
                // Killed between the two renames of the swap: the old version waits aside
                // and the restart puts it back.
                #expect(remoteScratch().contains { $0.hasSuffix("-old") }, "round \(round): the bundle is gone from the server and not set aside")
            } else {
                #expect(seen == old || seen == new, "round \(round): the server holds a mix of two versions")
            }
            let here = await Self.tree(bundle)
            #expect(here == new, "round \(round): the local bundle was touched")
        }
        try await expectConverged(expected)
        #expect(await remoteBundle("Deck.key") == new)
    }
}
