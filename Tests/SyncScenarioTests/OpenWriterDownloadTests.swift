import Foundation
import Replica
import SyncEngine
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A download never replaces a file (or bundle) a program holds open for writing: the
/// program's next writes would go to a file no longer in the folder, and be lost.
@Suite("downloads and open writers")
struct OpenWriterDownloadTests {
    @Test("a file changed on the server is not replaced while a program holds it open for writing", arguments: Remote.withOtherServers)
    func heldFile(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.write("notes.txt", "mine")
            try await world.sync()
            try await waitPastApacheSecond()
            try world.writeOnServer("notes.txt", "theirs")
            let writer = open(world.local("notes.txt"), O_WRONLY | O_APPEND | O_CLOEXEC)
            #expect(writer >= 0)
            let held = try await world.pass.run()
            #expect(held.report.failed.map(\.error.code) == [.locked], "\(held.report.failed)")
            #expect(held.report.failed.first?.error.message.contains("open for writing") == true)
            #expect(readFile(world.local("notes.txt")) == "mine", "replaced under an open writer")
            // The program writes on and closes: its bytes are a local change, and both versions are kept.
            #expect(write(writer, " and more", 9) == 9)
            close(writer)
            try await Task.sleep(for: .seconds(11))  // the item's first back-off
            try await world.sync()
            let names = try FileManager.default.contentsOfDirectory(atPath: world.localRoot).sorted()
            #expect(readFile(world.local("notes.txt")) == "theirs")
            let copy = try #require(names.first { $0.contains("conflicted copy") }, "\(names)")
            #expect(readFile(world.local(copy)) == "mine and more")
            try await world.expectAgreement()
        }
    }

    @Test("a bundle changed on the server is not replaced while a program holds one of its files open", arguments: Remote.withOtherServers)
    func heldBundle(_ remote: Remote) async throws {
        try await withWorld(remote) { world in
            try world.write("Deck.key/Index.xml", "v1")
            try world.write("Deck.key/Data/a.txt", "a1")
            try await world.sync()
            try await waitPastApacheSecond()
            try world.writeOnServer("Deck.key/Data/a.txt", "a2")
            let writer = open(world.local("Deck.key/Index.xml"), O_WRONLY | O_APPEND | O_CLOEXEC)
            #expect(writer >= 0)
            let held = try await world.pass.run()
            #expect(held.report.failed.map(\.error.code) == [.locked], "\(held.report.failed)")
            #expect(readFile(world.local("Deck.key/Data/a.txt")) == "a1", "replaced under an open writer")
            close(writer)
            try await Task.sleep(for: .seconds(11))
            try await world.sync()
            #expect(readFile(world.local("Deck.key/Data/a.txt")) == "a2")
            try await world.expectAgreement()
        }
    }

    /// Apache gives a weak ETag for a second after a write; a server-side edit within the
    /// same second as the upload could keep the size and look unchanged to a fast walk.
    func waitPastApacheSecond() async throws { try await Task.sleep(for: .milliseconds(1100)) }
}
