import Foundation
import Testing
import TestSupport

@Suite("tidesync command line", .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"))
final class CommandLineTests {
    let home: String

    deinit { try? FileManager.default.removeItem(atPath: home) }

    init() throws {
        home = temporaryPath("tidesync-cli-")
        try FileManager.default.createDirectory(atPath: home + "/.config/tidesync", withIntermediateDirectories: true)
    }

    @discardableResult
    func write(_ text: String, to name: String = ".config/tidesync/config.toml") throws -> String {
        let path = home + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("check-config reads the default path and says OK for a valid file")
    func validDefault() async throws {
        try FileManager.default.createDirectory(atPath: home + "/Cloud", withIntermediateDirectories: true)
        try write("[[domain]]\nname = \"home\"\nlocal = \"~/Cloud\"\nremote = \"file:///srv/store\"\n")
        let result = try await Binary.run(["check-config"], home: home)
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("OK, 1 domain"))
    }

    @Test("check-config prints every problem with its position and exits 1")
    func invalid() async throws {
        let path = try write("[[domain]]\nname = \"home\"\nlocal = \"~/Cloud\"\nremote = \"ftp://x/\"\npol_interval = \"5s\"\n", to: "bad.toml")
        let result = try await Binary.run(["check-config", "--config", path], home: home)
        #expect(result.status == 1)
        let lines = result.errors.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("\(path):4:") && $0.contains("ftp") })
        #expect(lines.contains { $0.hasPrefix("\(path):5:1: error: unknown key \"pol_interval\"") && $0.contains("poll_interval") })
    }

    @Test("check-config on a missing file exits 2 and says where it looked")
    func missing() async throws {
        let result = try await Binary.run(["check-config"], home: home)
        #expect(result.status == 2)
        #expect(result.errors.contains(".config/tidesync/config.toml"))
    }

    @Test("run --once syncs both ways, exits 0 when both sides agree, and a second run has nothing to do")
    func runOnce() async throws {
        for folder in ["Cloud", "store"] { try FileManager.default.createDirectory(atPath: home + "/" + folder, withIntermediateDirectories: true) }
        try Data("from the store".utf8).write(to: URL(fileURLWithPath: home + "/store/a.txt"))
        try Data("from here".utf8).write(to: URL(fileURLWithPath: home + "/Cloud/b.txt"))
        try write("[[domain]]\nname = \"home\"\nlocal = \"~/Cloud\"\nremote = \"file://\(home)/store\"\n")
        let result = try await Binary.run(["run", "--once"], home: home)
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.errors.contains("both sides agree"))
        #expect(try String(contentsOfFile: home + "/Cloud/a.txt", encoding: .utf8) == "from the store")
        #expect(try String(contentsOfFile: home + "/store/b.txt", encoding: .utf8) == "from here")
        #expect(FileManager.default.fileExists(atPath: home + "/.state/tidesync/home.sqlite"))
        let again = try await Binary.run(["run", "--once"], home: home)
        #expect(again.status == 0, "\(again.errors)")
        #expect(!again.errors.contains("step(s)"))
    }

    @Test("run --once after the domain's remote was changed to an empty folder keeps all 20 files and copies them there")
    func repointedRemote() async throws {
        for folder in ["Cloud", "store-a", "store-b"] {
            try FileManager.default.createDirectory(atPath: home + "/" + folder, withIntermediateDirectories: true)
        }
        for n in 0..<20 { try Data("file \(n)".utf8).write(to: URL(fileURLWithPath: home + "/Cloud/f\(n).txt")) }
        try write("[[domain]]\nname = \"home\"\nlocal = \"~/Cloud\"\nremote = \"file://\(home)/store-a\"\n")
        let first = try await Binary.run(["run", "--once"], home: home)
        #expect(first.status == 0, "\(first.errors)")
        try write("[[domain]]\nname = \"home\"\nlocal = \"~/Cloud\"\nremote = \"file://\(home)/store-b\"\n")
        let result = try await Binary.run(["run", "--once"], home: home)
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.errors.contains("the remote of domain home changed from file://\(home)/store-a"), "\(result.errors)")
        #expect(result.errors.contains("merging both trees as a first sync; nothing is deleted"))
        let here = try FileManager.default.contentsOfDirectory(atPath: home + "/Cloud").filter { $0.hasSuffix(".txt") }
        let there = try FileManager.default.contentsOfDirectory(atPath: home + "/store-b").filter { $0.hasSuffix(".txt") }
        #expect(here.count == 20)
        #expect(there.count == 20)
    }

    @Test("run --once holds the deletions of a store emptied at once; --allow-mass-delete carries them out")
    func emptiedStore() async throws {
        for folder in ["Cloud", "store"] { try FileManager.default.createDirectory(atPath: home + "/" + folder, withIntermediateDirectories: true) }
        for n in 0..<3 { try Data("file \(n)".utf8).write(to: URL(fileURLWithPath: home + "/Cloud/f\(n).txt")) }
        try write("[[domain]]\nname = \"home\"\nlocal = \"~/Cloud\"\nremote = \"file://\(home)/store\"\n")
        let synced = try await Binary.run(["run", "--once"], home: home)
        #expect(synced.status == 0, "\(synced.errors)")
        for n in 0..<3 { try FileManager.default.removeItem(atPath: home + "/store/f\(n).txt") }
        let held = try await Binary.run(["run", "--once"], home: home)
        #expect(held.status != 0)
        #expect(held.errors.contains("the server's folder is empty, but 3 synced item(s) are still in"), "\(held.errors)")
        #expect(held.errors.contains("tidesync run --once --allow-mass-delete"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: home + "/Cloud").filter { $0.hasSuffix(".txt") }.count == 3)
        // No daemon runs: status says what the last run held and how to release it.
        #expect(try await Self.heldInStatus(home: home)?["items"] as? Int == 3)
        #expect(try await Self.heldInStatus(home: home)?["release"] as? String == "tidesync run --once --allow-mass-delete")
        #expect(try await Binary.run(["status"], home: home).output.contains(
            "held: 3 deletion(s) in the sync folder (the server's folder is empty); to carry them out run `tidesync run --once --allow-mass-delete`"))
        let allowed = try await Binary.run(["run", "--once", "--allow-mass-delete"], home: home)
        #expect(allowed.status == 0, "\(allowed.errors)")
        #expect(try await Self.heldInStatus(home: home) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: home + "/Cloud").filter { $0.hasSuffix(".txt") }.isEmpty)
    }

    /// The first domain's `heldDeletions` in `tidesync status --json` (the daemon not running).
    static func heldInStatus(home: String) async throws -> [String: Any]? {
        let status = try await Binary.run(["status", "--json"], home: home)
        let json = try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any]
        let domain = (json?["domains"] as? [[String: Any]])?.first
        return domain?["heldDeletions"] as? [String: Any]
    }

    @Test("run names a missing store folder instead of reporting an empty remote")
    func missingStore() async throws {
        try FileManager.default.createDirectory(atPath: home + "/Cloud", withIntermediateDirectories: true)
        try write("[[domain]]\nname = \"home\"\nlocal = \"~/Cloud\"\nremote = \"file://\(home)/nowhere\"\n")
        let result = try await Binary.run(["run", "--once"], home: home)
        #expect(result.status == 1)
        #expect(result.errors.contains("does not exist"))
    }
}
