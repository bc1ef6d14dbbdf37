import Foundation
import Testing
import TestSupport

/// `run --once` against nginx, lighttpd and WsgiDAV (the servers besides Apache and rclone
/// that packaging/test.sh starts when installed): a tree goes up, the next pass does
/// nothing — no step, no GET, no PUT — and a change made on the server comes down. nginx
/// lists no ETag while its GET and HEAD send one: before versions were made from time and
/// size there, every pass downloaded every file again, forever.
@Suite("run --once on nginx, lighttpd and WsgiDAV",
       .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"))
struct OtherServersRunOnceTests {
    static var servers: [TestDAVServer] { [.nginx, .lighttpd, .wsgidav].filter(\.configured) }

    /// A scratch home whose one domain ("st") syncs ~/Cloud with a new collection on `server`.
    struct Home {
        let home = temporaryPath("tidesync-other-")
        let server: TestDAVServer
        let collection: String
        var local: String { home + "/Cloud" }
        var disk: String { server.diskRoot! + "/" + collection }
        var log: String { server.accessLog! }

        init(_ server: TestDAVServer) throws {
            self.server = server
            collection = "ro-" + UUID().uuidString.prefix(8)
            for folder in [local, home + "/.config/tidesync", disk] {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            }
            let config = "[[domain]]\nname = \"st\"\nlocal = \"~/Cloud\"\nremote = \"\(server.urlText!)\(collection)/\"\n"
                + "username = \"\(server.user!)\"\n"
            try Data(config.utf8).write(to: URL(fileURLWithPath: home + "/.config/tidesync/config.toml"))
        }

        func runOnce() async throws -> Binary.Result {
            try await Binary.run(Binary.path!, ["run", "--once"], environment: [
                "HOME": home, "XDG_CONFIG_HOME": home + "/.config", "XDG_STATE_HOME": home + "/.state",
                "PATH": "/usr/bin:/bin", "TIDESYNC_PASSWORD_ST": server.password!,
            ])
        }

        /// The requests with `method` the server logged after byte `mark` of its log.
        func requests(_ method: String, since mark: Int) -> [Substring] {
            let text = String(decoding: (FileManager.default.contents(atPath: log) ?? Data()).dropFirst(mark), as: UTF8.self)
            // Each run starts with the probe of how writes are guarded, on a scratch file of its own.
            return text.split(separator: "\n").filter {
                $0.contains("\"\(method) ") && $0.contains(collection) && !$0.contains(".tidesync-tmp-probe-")
            }
        }

        var logSize: Int { (try? FileManager.default.attributesOfItem(atPath: log)[.size] as? Int) ?? 0 }

        func cleanUp() {
            try? FileManager.default.removeItem(atPath: disk)
            try? FileManager.default.removeItem(atPath: home)
        }
    }

    @Test("a tree goes up, the next pass does nothing, a change on the server comes down", arguments: servers.map(\.name))
    func noChangePass(name: String) async throws {
        let home = try Home(TestDAVServer(name: name))
        defer { home.cleanUp() }
        try FileManager.default.createDirectory(atPath: home.local + "/docs", withIntermediateDirectories: true)
        for index in 0..<12 {
            try Data("file \(index)\n".utf8).write(to: URL(fileURLWithPath: home.local + "/docs/f\(index).txt"))
        }
        try Data("top".utf8).write(to: URL(fileURLWithPath: home.local + "/top.txt"))
        let first = try await home.runOnce()
        #expect(first.status == 0, "\(first.errors)")
        #expect(FileManager.default.contents(atPath: home.disk + "/docs/f11.txt") == Data("file 11\n".utf8))
        // What the probe proved about the server's PUT is kept for the next runs (nginx's
        // probe chooses locks before it looks at its PUT: it lists no ETag).
        let verdict = FileManager.default.contents(atPath: home.home + "/.state/tidesync/st.put-verdict").map { String(decoding: $0, as: UTF8.self) }
        let expected = [TestDAVServer.lighttpd.name: "\"writesInPlace\":false", TestDAVServer.wsgidav.name: "\"writesInPlace\":true"][name]
        // (None is kept when the large PUT hit its cap on a busy machine: undecided.)
        #expect(expected.map { verdict == nil || verdict!.contains($0) } ?? (verdict == nil), "kept verdict: \(verdict ?? "none")")

        // lighttpd writes its access log in batches: the first run's uploads are all in it
        // before the mark is taken.
        let logged = try await waitUntil(timeout: .seconds(20)) { home.requests("PUT", since: 0).count >= 13 }
        #expect(logged, "the server's log shows \(home.requests("PUT", since: 0).count) of the 13 uploads")
        let mark = home.logSize
        let second = try await home.runOnce()
        #expect(second.status == 0, "\(second.errors)")
        #expect(!second.errors.contains("step(s):"), "a pass with nothing to do planned steps: \(second.errors)")

        try Data("changed on the server, longer".utf8).write(to: URL(fileURLWithPath: home.disk + "/top.txt"))
        let third = try await home.runOnce()
        #expect(third.status == 0, "\(third.errors)")
        #expect(FileManager.default.contents(atPath: home.local + "/top.txt") == Data("changed on the server, longer".utf8))
        // Once the third run's download is in the log, so is all of the second run: the one
        // GET since the mark is that download, and nothing was uploaded.
        let flushed = try await waitUntil(timeout: .seconds(20)) { !home.requests("GET", since: mark).isEmpty }
        #expect(flushed, "the server's log never showed the third run's download")
        let gets = home.requests("GET", since: mark), puts = home.requests("PUT", since: mark)
        // lighttpd may first answer the GET with the old length (its stat cache, README):
        // tidesync refuses those bytes and asks again, so top.txt may be fetched twice.
        let allowed = name == TestDAVServer.lighttpd.name ? 1...2 : 1...1
        #expect(allowed.contains(gets.count) && gets.allSatisfy { $0.contains("top.txt") }, "downloaded again: \(gets.prefix(3))")
        #expect(puts.isEmpty, "uploaded again: \(puts.prefix(3))")
    }

    /// nginx's dav-ext module leaves every name beginning with "." out of its listings:
    /// before tidesync asked for such items by name, `.env` and `sub/.hidden` were uploaded
    /// by one `run --once` and deleted here by the next (the listing did not show them).
    @Test("names beginning with a dot are synced, kept, and changed or deleted from the server", arguments: servers.map(\.name))
    func dotNames(name: String) async throws {
        let home = try Home(TestDAVServer(name: name))
        defer { home.cleanUp() }
        let files = [".env": "secret", "sub/.hidden": "hidden", ".config/app.conf": "conf", ".config/.inner/deep.txt": "deep",
                     "visible.txt": "visible"]
        for (path, text) in files {
            try writeFile(home.local + "/" + path, text)
        }
        // Made by another client before this one's first sync: the create meets it.
        try writeFile(home.disk + "/.both", "theirs")
        try writeFile(home.local + "/.both", "mine, longer")
        for run in 1...2 {
            let result = try await home.runOnce()
            #expect(result.status == 0, "run \(run): \(result.errors)")
            for (path, text) in files {
                #expect(readFile(home.local + "/" + path) == text, "run \(run): \(path) here")
                #expect(readFile(home.disk + "/" + path) == text, "run \(run): \(path) on the server")
            }
            // Both versions kept, here and there: the server's under the name, this one's as a copy.
            let copies = (try FileManager.default.contentsOfDirectory(atPath: home.local)).filter { $0.hasPrefix(".both (conflicted copy") }
            #expect(readFile(home.local + "/.both") == "theirs" && copies.count == 1, "run \(run): \(copies)")
            #expect(copies.allSatisfy { readFile(home.local + "/" + $0) == "mine, longer" && readFile(home.disk + "/" + $0) == "mine, longer" })
        }
        try writeFile(home.disk + "/.env", "changed on the server, longer")
        try FileManager.default.removeItem(atPath: home.disk + "/sub/.hidden")
        try FileManager.default.removeItem(atPath: home.disk + "/.config/.inner")
        // lighttpd's stat cache may answer from before the change for about a second: runs
        // until the change is seen.
        var third = try await home.runOnce()
        _ = try await waitUntil(timeout: .seconds(20)) {
            if readFile(home.local + "/.env") == "changed on the server, longer",
               !FileManager.default.fileExists(atPath: home.local + "/sub/.hidden"),
               !FileManager.default.fileExists(atPath: home.local + "/.config/.inner") { return true }
            third = try await home.runOnce()
            return false
        }
        #expect(third.status == 0, "\(third.errors)")
        #expect(readFile(home.local + "/.env") == "changed on the server, longer")
        #expect(!FileManager.default.fileExists(atPath: home.local + "/sub/.hidden"), "deleted on the server, kept here")
        #expect(!FileManager.default.fileExists(atPath: home.local + "/.config/.inner"), "deleted on the server, kept here")
        #expect(readFile(home.local + "/.config/app.conf") == "conf")
        #expect(readFile(home.local + "/visible.txt") == "visible")
    }
}
