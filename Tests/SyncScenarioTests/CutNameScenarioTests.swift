import Foundation
import Replica
import SyncEngine
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Names with "?" and ";" through the whole engine, on every server. WsgiDAV takes such a
/// character in a MOVE's destination for the end of the name: there a file is renamed by a
/// copy, and writes below such a folder are made in place (they landed at the cut name).
@Suite("Names a server may cut in a MOVE's destination")
struct CutNameScenarioTests {
    @Test("a file renamed to a name with \"?\" and edited in a folder named with \"?\": both reach the server, nothing lands elsewhere",
          arguments: Remote.withOtherServers)
    func renamedAndEdited(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.write("notes/draft.txt", "the draft")
            try world.write("why?/answer.txt", "first answer")
            try await world.sync()
            #expect(world.serverText("why?/answer.txt") == "first answer")
            #expect(rename(world.local("notes/draft.txt"), world.local("notes/final?.txt")) == 0)
            try world.write("why?/answer.txt", "second answer, longer")
            try await world.sync()
            #expect(world.serverText("notes/final?.txt") == "the draft")
            #expect(world.serverText("why?/answer.txt") == "second answer, longer")
            #expect(!FileManager.default.fileExists(atPath: world.onServer("notes/final")), "the rename landed at the cut name")
            #expect(!FileManager.default.fileExists(atPath: world.onServer("why")), "a write landed at the cut name")
            try await world.expectAgreement()
            #expect(try await world.pass.run().steps == 0)
        }
    }
}
