import Foundation
import Testing
@testable import TidesyncConfig

@Suite("Password resolution")
struct PasswordTests {
    @Test("password_command's output, less one trailing newline, is the password")
    func fromCommand() throws {
        #expect(try CredentialSource.command("echo secret").resolvePassword(environment: [:]) == Password(cleartext: "secret"))
        #expect(try CredentialSource.command("printf 'a\\n\\n'").resolvePassword(environment: [:])?.cleartext == "a\n")
    }

    @Test("password_file's contents, less one trailing newline, are the password")
    func fromFile() throws {
        let fixture = try ConfigFixture()
        let path = try fixture.write("hunter2\n", to: "pw", mode: 0o600)
        #expect(try CredentialSource.file(path: path).resolvePassword(environment: [:])?.cleartext == "hunter2")
    }

    @Test("a password file readable by others is refused when read, too")
    func fileTooOpen() throws {
        let fixture = try ConfigFixture()
        let path = try fixture.write("hunter2\n", to: "pw", mode: 0o640)
        #expect(throws: PasswordError.fileTooOpen(path: path, mode: 0o640)) {
            try CredentialSource.file(path: path).resolvePassword(environment: [:])
        }
    }

    @Test("without password keys the domain's environment variable is used")
    func fromEnvironment() throws {
        let fixture = try ConfigFixture()
        let config = try fixture.load(domainTable(name: "my-home"))
        let domain = try #require(config.domains.first)
        #expect(domain.credentials == .environment(variable: "TIDESYNC_PASSWORD_MY_HOME"))
        let environment = ["TIDESYNC_PASSWORD_MY_HOME": "from-env"]
        #expect(try domain.resolvePassword(environment: environment)?.cleartext == "from-env")
        #expect(try domain.resolvePassword(environment: [:]) == nil)
    }

    @Test("a failing command's error names its exit status and never its output")
    func failingCommandDoesNotLeak() throws {
        let command = "printf '%s%s\\n' Top Secret42; printf '%s%s\\n' Top Secret42 >&2; exit 3"
        do {
            _ = try CredentialSource.command(command).resolvePassword(environment: [:])
            Issue.record("expected the command to fail")
        } catch {
            #expect(error == .commandFailed(command: command, status: 3))
            #expect(!error.description.contains("TopSecret42"))
            #expect(!"\(error)".contains("TopSecret42"))
            #expect(error.description.contains("failed with exit status 3"))
        }
    }

    @Test("a command that does not end in time is stopped, and says so", arguments: [
        "sleep 30",
        // Prints a password, closes its output, and goes on.
        "printf 'pw\\n'; exec >&-; sleep 30",
    ])
    func commandTimesOut(_ command: String) throws {
        let started = ContinuousClock.now
        #expect(throws: PasswordError.commandTimedOut(command: command, seconds: 1)) {
            _ = try CredentialSource.command(command).resolvePassword(environment: [:], timeout: .seconds(1))
        }
        // Bounded by the timeout and the stop (SIGTERM, then SIGKILL a second later), not by the command.
        #expect(ContinuousClock.now - started < .seconds(20))
        #expect(PasswordError.commandTimedOut(command: command, seconds: 60).description.contains("did not finish within 60 s"))
    }

    @Test("the command holds none of the daemon's descriptors, only its standard three")
    func commandInheritsNoDescriptor() throws {
        // Opened as `Data.write` or `FileHandle` would: without O_CLOEXEC.
        let leaked = open("/dev/null", O_RDONLY)
        #expect(leaked > 2)
        defer { close(leaked) }
        // ls opens the listed folder itself as its fourth descriptor (3).
        let open = try CredentialSource.command("exec ls /proc/self/fd").resolvePassword(environment: [:])?.cleartext
        #expect(open?.split(separator: "\n") == ["0", "1", "2", "3"])
    }

    @Test("a password is redacted wherever it is printed")
    func redacted() {
        let password = Password(cleartext: "hunter2")
        var dumped = ""
        dump(password, to: &dumped)
        for text in [String(describing: password), "\(password)", String(reflecting: password), dumped, "\([password])"] {
            #expect(!text.contains("hunter2"))
        }
        #expect(password.description == "<redacted>")
    }
}
