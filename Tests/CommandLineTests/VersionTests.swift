import Foundation
import Testing
import TestSupport

/// `tidesync --version`: the release and the git commit the binary was built from.
@Suite("tidesync --version")
struct VersionTests {
    static let script = DaemonFixture.repository + "/packaging/plugins/BuildCommit/build-commit.sh"

    @Test("--version prints the version and the commit of the sources it was built from",
          .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"))
    func version() async throws {
        let result = try await Binary.run(Binary.path!, ["--version"], environment: ["PATH": "/usr/bin:/bin"])
        let line = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(result.status == 0 && line.hasPrefix("tidesync 0."), "\(line) \(result.errors)")
        let git = try await Binary.run("/bin/sh", ["-c", "git -C \"$0\" rev-parse --short=12 HEAD", DaemonFixture.repository],
                                       environment: ["PATH": "/usr/bin:/bin"])
        if git.status == 0 {
            // test.sh builds right before the tests, so the binary is of this commit.
            #expect(line.contains("(commit \(git.output.trimmingCharacters(in: .whitespacesAndNewlines))"), "\(line)")
        } else {
            #expect(line.hasSuffix("(unknown commit)"), "\(line)")
        }
    }

    @Test("a build without git, or outside a repository, records no commit")
    func withoutGit() async throws {
        let out = temporaryPath("tidesync-commit-")
        defer { try? FileManager.default.removeItem(atPath: out) }
        for (repo, git) in [(DaemonFixture.repository, "/nonexistent/git"), (out, "git")] {
            let result = try await Binary.run("/bin/sh", [Self.script, repo, out], environment: ["PATH": "/usr/bin:/bin", "GIT": git])
            #expect(result.status == 0, "\(result.errors)")
            let text = String(decoding: FileManager.default.contents(atPath: out + "/BuildCommit.swift") ?? Data(), as: UTF8.self)
            #expect(text.contains("let buildCommit: String? = nil"), "\(text)")
        }
    }

    @Test("a build in the repository records its commit")
    func withGit() async throws {
        let git = try await Binary.run("/bin/sh", ["-c", "git -C \"$0\" rev-parse --short=12 HEAD", DaemonFixture.repository],
                                       environment: ["PATH": "/usr/bin:/bin"])
        try #require(git.status == 0, "git or the repository is missing here")
        let out = temporaryPath("tidesync-commit-")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let result = try await Binary.run("/bin/sh", [Self.script, DaemonFixture.repository, out], environment: ["PATH": "/usr/bin:/bin"])
        #expect(result.status == 0, "\(result.errors)")
        let text = String(decoding: FileManager.default.contents(atPath: out + "/BuildCommit.swift") ?? Data(), as: UTF8.self)
        #expect(text.contains("let buildCommit: String? = \"\(git.output.trimmingCharacters(in: .whitespacesAndNewlines))"), "\(text)")
    }
}
