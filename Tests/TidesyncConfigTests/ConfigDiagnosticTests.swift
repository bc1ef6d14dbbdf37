import Foundation
import Testing
@testable import TidesyncConfig

/// One bad file per rule, each asserting the exact line the user sees.
@Suite("check-config diagnostics")
struct ConfigDiagnosticTests {
    @Test("an unknown top-level key suggests the likely key")
    func unknownTopLevelKey() throws {
        let fixture = try ConfigFixture()
        let errors = try fixture.errors("log_levl = \"debug\"\n" + domainTable())
        #expect(errors == [
            "\(fixture.path()):1:1: error: unknown key \"log_levl\" at the top level; did you mean \"log_level\"? Fix the spelling or remove the line.",
        ])
    }

    @Test("an unknown domain key suggests the likely key")
    func unknownDomainKey() throws {
        let fixture = try ConfigFixture()
        let errors = try fixture.errors(domainTable("pol_interval = \"30s\""))
        #expect(errors == [
            "\(fixture.path()):5:1: error: unknown key \"pol_interval\" in [[domain]] \"home\"; did you mean \"poll_interval\"? Fix the spelling or remove the line.",
        ])
    }

    @Test("an unknown placeholders key suggests the likely key")
    func unknownPlaceholdersKey() throws {
        let fixture = try ConfigFixture()
        let errors = try fixture.errors(domainTable("""

            [domain.placeholders]
            mode = "off"
            min_sise = "1MiB"
            """))
        #expect(errors == [
            "\(fixture.path()):8:1: error: unknown key \"min_sise\" in [domain.placeholders] of domain \"home\"; did you mean \"min_size\"? Fix the spelling or remove the line.",
        ])
    }

    @Test("a domain key above the first [[domain]] says where it belongs")
    func misplacedKey() throws {
        let fixture = try ConfigFixture()
        let errors = try fixture.errors("poll_interval = \"30s\"\n" + domainTable())
        #expect(errors == [
            "\(fixture.path()):1:1: error: key \"poll_interval\" does not belong at the top level; it is a [[domain]] setting: move it below a [[domain]] header.",
        ])
    }

    @Test("a wrong value on line 5 of a domain is reported at the value", arguments: [
        ("transfers = \"four\"", "5:13: error: domain \"home\": transfers must be an integer from 1 to 64, found a string (\"four\")."),
        ("transfers = 65", "5:13: error: domain \"home\": transfers must be an integer from 1 to 64, found 65."),
        ("username = 5", "5:12: error: domain \"home\": username must be a string, found an integer (5)."),
        ("allow_insecure_http = \"yes\"", "5:23: error: domain \"home\": allow_insecure_http must be true or false, found a string (\"yes\")."),
        ("exclude = \"*.tmp\"", "5:11: error: domain \"home\": exclude must be an array of strings, e.g. exclude = [\"*.tmp\"], found a string (\"*.tmp\")."),
        ("exclude = [\"*.tmp\", 3]", "5:21: error: domain \"home\": exclude[1] must be a string, found an integer (3)."),
        ("poll_interval = \"30 seconds\"", "5:17: error: domain \"home\": poll_interval = \"30 seconds\" is not a duration; write a number and a unit, e.g. \"30s\", \"5m\", \"1h\"."),
        ("poll_interval = 30", "5:17: error: domain \"home\": poll_interval = 30 has no unit; write a string with a unit, e.g. poll_interval = \"30s\"."),
        ("rescan_interval = true", "5:19: error: domain \"home\": rescan_interval must be a duration such as \"30s\", \"5m\" or \"1h\", found a boolean (true)."),
        ("debounce = \"0s\"", "5:12: error: domain \"home\": debounce = \"0s\" must be longer than zero."),
        ("max_delete = -1", "5:14: error: domain \"home\": max_delete must be an integer of 0 or more, found -1."),
        ("connect_timeout = 15", "5:19: error: domain \"home\": connect_timeout = 15 has no unit; write a string with a unit, e.g. connect_timeout = \"15s\"."),
        ("connect_timeout = \"1h\"", "5:19: error: domain \"home\": connect_timeout must be at most 10 minutes, e.g. \"15s\"."),
        ("low_speed_limit = \"fast\"", "5:19: error: domain \"home\": low_speed_limit = \"fast\" is not a size; write a number and a unit, e.g. \"4KiB\", \"16MiB\", \"1GiB\", or a number of bytes."),
        ("low_speed_limit = \"2GiB\"", "5:19: error: domain \"home\": low_speed_limit = \"2GiB\" is more than 1GiB per second; write the slowest acceptable speed per second, e.g. \"1KiB\", or 0 to turn the check off."),
        ("low_speed_time = \"500ms\"", "5:18: error: domain \"home\": low_speed_time must be at least 1 second, e.g. \"30s\"."),
        ("low_speed_time = \"0s\"", "5:18: error: domain \"home\": low_speed_time = \"0s\" must be longer than zero."),
        ("bundle_extensions = [\".app\"]", "5:22: error: domain \"home\": bundle_extensions[0] = \".app\" must be an extension without a dot, e.g. \"app\"."),
    ])
    func wrongDomainValue(line: String, expected: String) throws {
        let fixture = try ConfigFixture()
        #expect(try fixture.errors(domainTable(line)) == ["\(fixture.path()):\(expected)"])
    }

    @Test("a wrong placeholders value is reported at the value", arguments: [
        ("min_size = \"16 megs\"", "7:12: error: domain \"home\": placeholders.min_size = \"16 megs\" is not a size; write a number and a unit, e.g. \"4KiB\", \"16MiB\", \"1GiB\", or a number of bytes."),
        ("alignment = \"3KiB\"", "7:13: error: domain \"home\": placeholders.alignment = \"3KiB\" is not a power of two; use e.g. \"4KiB\", \"64KiB\" or \"1MiB\"."),
        ("alignment = 2048", "7:13: error: domain \"home\": placeholders.alignment = 2048 is below the minimum of 4KiB; use e.g. \"4KiB\", \"64KiB\" or \"1MiB\"."),
        ("mode = \"sometimes\"", "7:8: error: domain \"home\": placeholders.mode = \"sometimes\" is not a placeholder mode; use \"off\", \"auto\" or \"all\"."),
        ("hydration_timeout = \"0s\"", "7:21: error: domain \"home\": placeholders.hydration_timeout = \"0s\" must be longer than zero."),
        ("hydrate_on_open = [\"/usr/bin/cp\"]", "7:20: error: domain \"home\": placeholders.hydrate_on_open[0] = \"/usr/bin/cp\" is a path; write the program's name only, e.g. \"cp\"."),
        ("hydrate_on_open = [\"cp\", \"\"]", "7:26: error: domain \"home\": placeholders.hydrate_on_open[1] = \"\" is empty; write a program's name, e.g. \"cp\"."),
        ("hydrate_on_open = [\"my-long-backup-tool\"]", "7:20: error: domain \"home\": placeholders.hydrate_on_open[0] = \"my-long-backup-tool\" is longer than the 15 bytes the kernel keeps of a process name; write \"my-long-backup-\"."),
        ("thumbnail_max_fetch = \"1GiB\"", "7:23: error: domain \"home\": placeholders.thumbnail_max_fetch = \"1GiB\" is too large: an image is fetched into memory for its thumbnail; write at most \"64MiB\" (or 0 for embedded previews only)."),
        ("thumbnail_cache = \"\"", "7:19: error: domain \"home\": placeholders.thumbnail_cache is empty; write an absolute path, a path starting with ~/, or a path relative to the directory of this file."),
        ("deny_hydration = [\"tracker-miner-fs-3\"]", "7:19: error: domain \"home\": placeholders.deny_hydration[0] = \"tracker-miner-fs-3\" is longer than the 15 bytes the kernel keeps of a process name; write \"tracker-miner-f\"."),
    ])
    func wrongPlaceholdersValue(line: String, expected: String) throws {
        let fixture = try ConfigFixture()
        let errors = try fixture.errors(domainTable("\n[domain.placeholders]\n" + line))
        #expect(errors == ["\(fixture.path()):\(expected)"])
    }

    @Test("local folders must not overlap", arguments: [
        ("/srv/sync/a", "/srv/sync/a/inner", "local \"/srv/sync/a/inner\" is inside the local folder of domain \"a\" (\"/srv/sync/a\"); sync folders must not overlap: choose a folder outside it."),
        ("/srv/sync/a/inner", "/srv/sync/a", "local \"/srv/sync/a\" contains the local folder of domain \"a\" (\"/srv/sync/a/inner\"); sync folders must not overlap: choose a folder that does not contain it."),
        ("/srv/sync/a", "/srv//sync/./a/", "local \"/srv/sync/a\" is the same folder as the local folder of domain \"a\"; give each domain its own folder."),
    ])
    func overlappingFolders(first: String, second: String, expected: String) throws {
        let fixture = try ConfigFixture()
        let errors = try fixture.errors("""
            [[domain]]
            name = "a"
            local = "\(first)"
            remote = "https://cloud.example.com/a/"

            [[domain]]
            name = "b"
            local = "\(second)"
            remote = "https://cloud.example.com/b/"
            """)
        #expect(errors == ["\(fixture.path()):8:9: error: domain \"b\": \(expected)"])
    }

    @Test("a remote with an unsupported scheme names the allowed ones")
    func unsupportedScheme() throws {
        let fixture = try ConfigFixture()
        let errors = try fixture.errors(domainTable(remote: "ftp://files.example.com/x"))
        #expect(errors == [
            "\(fixture.path()):4:10: error: domain \"home\": remote \"ftp://files.example.com/x\" has scheme \"ftp\", which tidesync does not support; use an https:// or http:// URL (WebDAV) or a file: URL (a directory).",
        ])
    }

    @Test("credentials in the remote URL are refused without echoing the password")
    func credentialsInURL() throws {
        let fixture = try ConfigFixture()
        let errors = try fixture.errors(domainTable(remote: "https://alice:Sup3rS3cret@cloud.example.com/dav/"))
        #expect(errors == [
            "\(fixture.path()):4:10: error: domain \"home\": remote \"https://***@cloud.example.com/dav/\" contains credentials; remove them from the URL and set username = \"alice\" with password_command or password_file instead.",
        ])
        #expect(!errors.joined().contains("Sup3rS3cret"))
    }

    @Test("a password with unencoded characters in the URL is not echoed either", arguments: [
        "https://alice:Sup3r/S3cret@cloud.example.com/dav/",
        "https://alice:Sup3r@S3cret@cloud.example.com/dav/",
        "ftp://alice:Sup3rS3cret@files.example.com/",
        "file://alice:Sup3rS3cret@files.example.com/x",
    ])
    func passwordNeverEchoed(remote: String) throws {
        let fixture = try ConfigFixture()
        let errors = try fixture.errors(domainTable(remote: remote))
        #expect(errors.count == 1)
        #expect(!errors.joined().contains("S3cret"))
    }

    @Test("plain http to another machine needs allow_insecure_http")
    func insecureHTTP() throws {
        let fixture = try ConfigFixture()
        let errors = try fixture.errors(domainTable(remote: "http://cloud.example.com/dav/"))
        #expect(errors == [
            "\(fixture.path()):4:10: error: domain \"home\": remote \"http://cloud.example.com/dav/\" uses plain http to cloud.example.com, which is not this machine, so your password and files would cross the network unencrypted; use https://, or set allow_insecure_http = true to accept that.",
        ])
    }

    @Test("a password file readable by others is refused, with the chmod that fixes it")
    func passwordFileMode() throws {
        let fixture = try ConfigFixture()
        let secret = try fixture.write("hunter2\n", to: "pw", mode: 0o644)
        let text = domainTable("username = \"alice\"\npassword_file = \"pw\"")
        let errors = try fixture.errors(text)
        #expect(errors == [
            "\(fixture.path()):6:17: error: domain \"home\": password_file \"\(secret)\" has mode 0644, so other users can read or change it; run chmod 600 \(secret).",
        ])
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secret)
        let outcome = try fixture.check(text)
        #expect(outcome.exitCode == 0)
        #expect(outcome.standardError == [])
    }

    @Test("a missing password file is an error")
    func missingPasswordFile() throws {
        let fixture = try ConfigFixture()
        let errors = try fixture.errors(domainTable("username = \"alice\"\npassword_file = \"/nonexistent/pw\""))
        #expect(errors == [
            "\(fixture.path()):6:17: error: domain \"home\": password_file \"/nonexistent/pw\" does not exist; create it with the password on one line and run chmod 600 /nonexistent/pw.",
        ])
    }

    @Test("password_command and password_file are not both allowed")
    func bothPasswordSources() throws {
        let fixture = try ConfigFixture()
        try fixture.write("x\n", to: "pw")
        let errors = try fixture.errors(domainTable("username = \"alice\"\npassword_file = \"pw\"\npassword_command = \"echo x\""))
        #expect(errors == [
            "\(fixture.path()):7:1: error: domain \"home\": password_command and password_file are both set; keep one of them and remove the other.",
        ])
    }

    @Test("a password source for a WebDAV remote needs a username")
    func passwordWithoutUsername() throws {
        let fixture = try ConfigFixture()
        let errors = try fixture.errors(domainTable("password_command = \"echo x\""))
        #expect(errors == [
            "\(fixture.path()):1:1: error: domain \"home\": a password source is set but username is not; add username = \"…\" with your account name on the server.",
        ])
    }

    @Test("domain names are unique, also by password variable")
    func duplicateNames() throws {
        let fixture = try ConfigFixture()
        let text = { (second: String) in
            """
            [[domain]]
            name = "my-home"
            local = "~/A"
            remote = "https://cloud.example.com/a/"

            [[domain]]
            name = "\(second)"
            local = "~/B"
            remote = "https://cloud.example.com/b/"
            """
        }
        #expect(try fixture.errors(text("my-home")) == [
            "\(fixture.path()):7:8: error: domain \"my-home\": the name \"my-home\" is already used by the domain at line 2; give each domain its own name.",
        ])
        #expect(try fixture.errors(text("MY_home")) == [
            "\(fixture.path()):7:8: error: domain \"MY_home\": the name \"MY_home\" is too close to \"my-home\" (the domain at line 2): both would use the password variable TIDESYNC_PASSWORD_MY_HOME; rename one of them.",
        ])
    }

    @Test("a file without a domain is an error without a position")
    func noDomain() throws {
        let fixture = try ConfigFixture()
        #expect(try fixture.errors("log_level = \"info\"\n") == [
            "\(fixture.path()): error: no domain is configured; add a [[domain]] table with name, local and remote for each folder to sync (see config/example.toml).",
        ])
    }

    @Test("a missing required key is reported at the [[domain]] header")
    func missingRequiredKey() throws {
        let fixture = try ConfigFixture()
        let errors = try fixture.errors("log_level = \"info\"\n\n[[domain]]\nname = \"home\"\nlocal = \"~/Cloud\"\n")
        #expect(errors == [
            "\(fixture.path()):3:1: error: domain \"home\": missing required key \"remote\"; add e.g. remote = \"https://cloud.example.com/remote.php/dav/files/USER/\".",
        ])
    }

    @Test("every problem is reported, in file order")
    func everyProblem() throws {
        let fixture = try ConfigFixture()
        let errors = try fixture.errors("""
            log_level = "verbose"
            [[domain]]
            name = "home"
            local = "~/Cloud"
            remote = "gopher://example.com/"
            transfers = 0
            tranfers = 2
            """)
        let file = fixture.path()
        #expect(errors == [
            "\(file):1:13: error: log_level = \"verbose\" is not a log level; use one of \"trace\", \"debug\", \"info\", \"notice\", \"warning\", \"error\" or \"critical\".",
            "\(file):5:10: error: domain \"home\": remote \"gopher://example.com/\" has scheme \"gopher\", which tidesync does not support; use an https:// or http:// URL (WebDAV) or a file: URL (a directory).",
            "\(file):6:13: error: domain \"home\": transfers must be an integer from 1 to 64, found 0.",
            "\(file):7:1: error: unknown key \"tranfers\" in [[domain]] \"home\"; did you mean \"transfers\"? Fix the spelling or remove the line.",
        ])
    }

    @Test("a syntax error keeps TOMLKit's line and column")
    func syntaxError() throws {
        let fixture = try ConfigFixture()
        let outcome = try fixture.check("log_level = \"info\"\n[[domain]]\nname = \"home\nlocal = \"~/Cloud\"\n")
        #expect(outcome.exitCode == 1)
        #expect(outcome.standardError.count == 1)
        #expect(outcome.standardError.first?.hasPrefix("\(fixture.path()):3:") == true)
        #expect(outcome.standardError.first?.contains(": error: TOML syntax error while parsing") == true)
    }

    @Test("a missing file exits with status 2 and says how to create one")
    func missingFile() throws {
        let fixture = try ConfigFixture()
        let outcome = ConfigCheck.run(configPath: fixture.path("absent.toml"), environment: fixture.environment)
        #expect(outcome.exitCode == 2)
        #expect(outcome.standardError == [
            "\(fixture.path("absent.toml")): error: no such file; create it, e.g. mkdir -p \(fixture.directory) && cp config/example.toml \(fixture.path("absent.toml")) (example.toml is in the tidesync sources), then edit it; or name another file with --config FILE.",
        ])
    }

    @Test("without --config the default path is checked and shown with ~")
    func missingDefaultFile() throws {
        let fixture = try ConfigFixture()
        let outcome = ConfigCheck.run(configPath: nil, environment: fixture.environment)
        #expect(outcome.exitCode == 2)
        #expect(outcome.standardError.count == 2)
        #expect(outcome.standardError.first?.hasPrefix("~/.config/tidesync/config.toml: error: no such file; create it, e.g. mkdir -p ~/.config/tidesync && cp") == true)
    }

    @Test("odd input never crashes and always gives an error", arguments: [
        "", "\u{FEFF}", "domain = 5", "[domain]\nname = \"x\"", "domain = []", "domain = [1, \"x\"]",
        "[[domain]]\nname = 1\nlocal = []\nremote = {}\nplaceholders = 3",
        "[[domain]]\nname = \"bad name!\"\nlocal = \"\"\nremote = \"file://\"",
        "[[domain]]\nname = \"x\"\nlocal = \"~bob/x\"\nremote = \"https:///nohost\"",
        "a = \"\"\"\nmulti\n[[domain]]\n\"\"\"\n'quoted key' = { inner = [1, [2, {x = 3}]] }",
        "x = \"nul\u{0}\"", "[[domain.placeholders]]\nmode = 1",
    ])
    func oddInput(text: String) throws {
        let fixture = try ConfigFixture()
        let outcome = try fixture.check(text)
        #expect(outcome.exitCode == 1)
        #expect(!outcome.standardError.isEmpty)
    }

    @Test("a file that is not UTF-8 is an error")
    func notUTF8() throws {
        let fixture = try ConfigFixture()
        let path = fixture.path()
        try Data([0x6C, 0x6F, 0x67, 0xFF, 0xFE]).write(to: URL(fileURLWithPath: path))
        let outcome = ConfigCheck.run(configPath: path, environment: fixture.environment)
        #expect(outcome.exitCode == 1)
        #expect(outcome.standardError == ["\(path): error: the file is not UTF-8 text; save it as UTF-8."])
    }
}
