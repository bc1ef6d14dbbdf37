import Foundation
import SyncModel
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The sync folder is known by its inode and the inode's generation: ext4 gives a folder
/// deleted and made again at once its old inode number back, and an empty folder taken for
/// the synced one reads as "the user deleted everything".
@Suite("the sync folder's identity")
struct RootIdentityTests {
    @Test("a sync folder deleted and made again at once is refused, even with its old inode number", arguments: Remote.withOtherServers)
    func remadeAtOnce(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            for index in 0..<5 { try world.write("docs/file\(index).txt", "\(index)") }
            try await world.sync()
            var before = stat(), after = stat()
            #expect(lstat(world.localRoot, &before) == 0)
            try FileManager.default.removeItem(atPath: world.localRoot)
            // Made again until it has its old inode number (ext4 usually hands it back at
            // once; other tests making files meanwhile may take it first).
            var tries = 0
            repeat {
                if tries > 0 { #expect(rmdir(world.localRoot) == 0) }
                tries += 1
                #expect(mkdir(world.localRoot, 0o755) == 0)
                #expect(lstat(world.localRoot, &after) == 0)
            } while after.st_ino != before.st_ino && tries < 200
            try world.write("new.txt", "made in the new folder")
            print("sync folder remade (\(remote)): inode \(before.st_ino) then \(after.st_ino) after \(tries) tries\(before.st_ino == after.st_ino ? " (reused)" : "")")
            do {
                _ = try await world.pass.run()
                Issue.record("a pass over a folder made again ran instead of stopping")
            } catch let error as ProviderError {
                #expect(error.code == .cannotSynchronize && error.message.contains("is not the folder synced before"), "\(error.message)")
            }
            #expect(world.serverText("docs/file3.txt") == "3", "nothing deleted on the server")
            #expect(world.serverText("new.txt") == nil, "nothing of the new folder uploaded")
        }
    }
}
