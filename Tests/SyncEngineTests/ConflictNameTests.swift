import Foundation
import SyncEngine
import Testing

@Suite("Conflict-copy names")
struct ConflictNameTests {
    static func make(_ name: String, taken: Set<String> = []) -> String {
        ConflictName.make(for: name, date: World.now, host: World.host, timeZone: World.utc, taken: taken)
    }

    @Test("the marker goes before the extension")
    func withExtension() {
        #expect(Self.make("report.pdf") == "report (conflicted copy 2026-11-22 134501 laptop).pdf")
    }

    @Test("a name without an extension gets the marker at its end")
    func withoutExtension() {
        #expect(Self.make("Makefile") == "Makefile (conflicted copy 2026-11-22 134501 laptop)")
    }

    @Test("a dotfile's leading dot is not an extension")
    func dotfile() {
        #expect(Self.make(".bashrc") == ".bashrc (conflicted copy 2026-11-22 134501 laptop)")
        #expect(Self.make(".config.json") == ".config (conflicted copy 2026-11-22 134501 laptop).json")
    }

    @Test("only the last extension stays after the marker")
    func doubleExtension() {
        #expect(Self.make("archive.tar.gz") == "archive.tar (conflicted copy 2026-11-22 134501 laptop).gz")
    }

    @Test("the time is written in the given zone")
    func timeZone() {
        let name = ConflictName.make(for: "a.txt", date: World.now, host: "pc",
                                     timeZone: TimeZone(secondsFromGMT: 3600)!, taken: [])
        #expect(name == "a (conflicted copy 2026-11-22 144501 pc).txt")
    }

    @Test("a taken name gets a counter, 2 then 3")
    func counter() {
        let first = Self.make("report.pdf")
        let second = Self.make("report.pdf", taken: [first])
        #expect(second == "report (conflicted copy 2026-11-22 134501 laptop 2).pdf")
        #expect(Self.make("report.pdf", taken: [first, second]) == "report (conflicted copy 2026-11-22 134501 laptop 3).pdf")
    }

    @Test("a conflict-copy name parses back to its base name", arguments: ["report.pdf", "Makefile", ".bashrc", "archive.tar.gz", "a b (1).txt"])
    func roundTrip(name: String) throws {
        let once = try #require(ConflictName.parse(Self.make(name)))
        #expect(once == ConflictName.Parts(baseName: name, timestamp: "2026-11-22 134501", host: "laptop", counter: 1))
        let second = try #require(ConflictName.parse(Self.make(name, taken: [Self.make(name)])))
        #expect(second.baseName == name && second.counter == 2)
    }

    @Test("ordinary names are not conflict copies", arguments: [
        "report.pdf", "notes (draft).txt", "x (conflicted copy).txt", "x (conflicted copy 2026-1-22 134501 h).txt",
        "x (conflicted copy 2026-11-22 134501 h 1).txt", "x (conflicted copy 2026-11-22 1345 h).txt",
    ])
    func notACopy(name: String) {
        #expect(ConflictName.parse(name) == nil)
    }

    @Test("a copy of a conflict copy is a new copy of the base name, never nested")
    func noCopyOfACopy() {
        let copy = "report (conflicted copy 2025-01-02 030405 desktop).pdf"
        #expect(Self.make(copy) == "report (conflicted copy 2026-11-22 134501 laptop).pdf")
    }

    @Test("a long name is shortened to fit 255 bytes, keeping marker and extension")
    func longName() throws {
        let name = String(repeating: "é", count: 120) + ".txt"
        let copy = Self.make(name)
        #expect(copy.utf8.count <= 255)
        #expect(copy.hasSuffix(" (conflicted copy 2026-11-22 134501 laptop).txt"))
        #expect(try RemotePath([copy]).name == copy)
    }

    @Test("a host with spaces or slashes still gives one valid name")
    func oddHost() throws {
        let name = ConflictName.make(for: "a.txt", date: World.now, host: "my pc/2", timeZone: World.utc, taken: [])
        #expect(name == "a (conflicted copy 2026-11-22 134501 my-pc-2).txt")
        #expect(ConflictName.parse(name)?.host == "my-pc-2")
    }

    @Test("editing a conflict copy is an ordinary edit: uploaded, no copy of the copy")
    func editedCopyIsNoConflict() {
        var w = World()
        let name = "report (conflicted copy 2025-01-02 030405 desktop).pdf"
        w.synced(name)
        w.editLocal(name, size: 50)
        #expect(w.plan() == [.upload(p(name), condition: .mustMatch(w.baseETag(name)), source: w.stat(name), item: w.id(name))])
    }

    @Test("in a plan, a conflict-copy name already taken on a side gets a counter")
    func takenInPlan() {
        var w = World()
        w.synced("x.txt")
        w.createRemote(World.copyName("x.txt"), size: 1)
        w.editLocal("x.txt", size: 20)
        w.editRemote("x.txt", size: 30)
        let copies = w.plan().compactMap { action -> RemotePath? in
            if case .conflictCopy(let c) = action { c.copy } else { nil }
        }
        #expect(copies == [p(World.copyName("x.txt", counter: 2))])
    }
}
