import Foundation
import Testing
@testable import TidesyncConfig

@Suite("Loading a valid configuration")
struct ConfigLoaderTests {
    @Test("every key set loads with the right values")
    func everyKeySet() throws {
        let fixture = try ConfigFixture()
        try fixture.write("lab\n", to: "secrets/lab.pw", mode: 0o600)
        let config = try fixture.load("""
            log_level = "debug"
            socket = "run/tidesync.sock"
            state_dir = "~/state"

            [[domain]]
            name = "home"
            local = "~/Cloud"
            remote = "https://cloud.example.com/remote.php/dav/files/alice"
            username = "alice"
            password_command = "echo secret"
            allow_insecure_http = false
            poll_interval = "1m30s"
            debounce = "250ms"
            rescan_interval = "2h"
            transfers = 8
            max_delete = 100
            connect_timeout = "5s"
            low_speed_limit = "4KiB"
            low_speed_time = "1m"
            exclude = ["*.tmp", "build/"]
            bundle_extensions = ["app", "pages"]

            [domain.placeholders]
            mode = "auto"
            min_size = "8MiB"
            alignment = 65536
            keep_local = ["Documents/**"]
            hydration_timeout = "2m"
            hydrate_on_open = ["cp", "my-backup-tool"]
            deny_hydration = ["my-indexer"]

            [[domain]]
            name = "lab-data"
            local = "data/lab"
            remote = "file:store/lab"
            password_file = "secrets/lab.pw"
            """)
        let dir = fixture.directory
        #expect(config.filePath == dir + "/config.toml")
        #expect(config.logLevel == .debug)
        #expect(config.socketPath == dir + "/run/tidesync.sock")
        #expect(config.stateDirectory == fixture.home + "/state")
        #expect(config.domains.count == 2)

        let home = try #require(config.domains.first)
        #expect(home.name == "home")
        #expect(home.localPath == fixture.home + "/Cloud")
        #expect(home.remote == .webDAV(try #require(URL(string: "https://cloud.example.com/remote.php/dav/files/alice/"))))
        #expect(home.username == "alice")
        #expect(home.credentials == .command("echo secret"))
        #expect(home.allowInsecureHTTP == false)
        #expect(home.pollInterval == .seconds(90))
        #expect(home.debounce == .milliseconds(250))
        #expect(home.rescanInterval == .seconds(7200))
        #expect(home.transfers == 8)
        #expect(home.maxDelete == 100)
        #expect(home.connectTimeout == .seconds(5))
        #expect(home.lowSpeedLimit == ByteCount(4096))
        #expect(home.lowSpeedTime == .seconds(60))
        #expect(home.exclude == ["*.tmp", "build/"])
        #expect(home.bundleExtensions == ["app", "pages"])
        #expect(home.placeholders == PlaceholderSettings(
            mode: .auto, minimumSize: ByteCount(8 << 20), alignment: ByteCount(65536), keepLocal: ["Documents/**"],
            hydrationTimeout: .seconds(120), hydrateOnOpen: ["cp", "my-backup-tool"],
            denyHydration: ["my-indexer"]
        ))
        #expect(config.stateDatabasePath(for: home) == fixture.home + "/state/home.sqlite")

        let lab = config.domains[1]
        #expect(lab.name == "lab-data")
        #expect(lab.localPath == dir + "/data/lab")
        #expect(lab.remote == .localDirectory(dir + "/store/lab"))
        #expect(lab.username == nil)
        #expect(lab.credentials == .file(path: dir + "/secrets/lab.pw"))
        #expect(lab.pollInterval == .seconds(30))
        #expect(lab.debounce == .seconds(1))
        #expect(lab.rescanInterval == .seconds(3600))
        #expect(lab.transfers == 4)
        #expect(lab.maxDelete == 500)
        #expect(lab.connectTimeout == .seconds(15))
        #expect(lab.lowSpeedLimit == ByteCount(1024))
        #expect(lab.lowSpeedTime == .seconds(30))
        #expect(lab.exclude.isEmpty)
        #expect(lab.bundleExtensions == DomainConfiguration.defaultBundleExtensions)
        #expect(lab.placeholders == PlaceholderSettings())
        #expect(lab.placeholders.minimumSize == ByteCount(16 << 20))
        #expect(lab.placeholders.alignment == ByteCount(1 << 20))
        #expect(lab.placeholders.hydrationTimeout == .seconds(30))
        #expect(lab.placeholders.hydrateOnOpen == ["cp", "mv", "tar", "bsdtar", "install", "rsync"])
        #expect(lab.placeholders.denyHydration.contains("tracker-miner-f") && lab.placeholders.denyHydration.contains("baloo_file"))
    }

    @Test("settings not yet in effect are notes, printed after OK")
    func notesForSettingsNotInEffect() throws {
        let fixture = try ConfigFixture()
        let outcome = try fixture.check(domainTable("""
            bundle_extensions = ["app"]
            max_delete = 10

            [domain.placeholders]
            mode = "auto"
            """))
        let file = fixture.path()
        #expect(outcome.exitCode == 0)
        #expect(outcome.standardError.isEmpty)
        #expect(outcome.standardOutput == [
            "\(file): OK, 1 domain",
            "\(file):9:8: note: domain \"home\": placeholders need the daemon to run as root on Linux 6.14 or later (files are "
                + "downloaded in full otherwise)",
        ])
    }

    @Test("the default mode (auto) needs no note: it falls back to whole files by itself")
    func noNoteForTheDefaultMode() throws {
        let fixture = try ConfigFixture()
        let outcome = try fixture.check(domainTable("max_delete = 10"))
        #expect(outcome.exitCode == 0)
        #expect(outcome.standardOutput == ["\(fixture.path()): OK, 1 domain"])
    }

    @Test("defaults come from the XDG environment")
    func xdgDefaults() throws {
        let fixture = try ConfigFixture()
        let config = try fixture.load(domainTable())
        #expect(config.logLevel == .info)
        #expect(config.socketPath == fixture.directory + "/run/tidesync.sock")
        #expect(config.stateDirectory == fixture.directory + "/state/tidesync")
        let domain = try #require(config.domains.first)
        #expect(domain.credentials == .environment(variable: "TIDESYNC_PASSWORD_HOME"))
        #expect(config.notices.isEmpty)
    }

    @Test("the state directory defaults to ~/.local/state/tidesync without XDG_STATE_HOME")
    func stateDirectoryWithoutXDG() throws {
        let fixture = try ConfigFixture()
        let path = try fixture.write(domainTable())
        let config = try ConfigLoader.load(path: path, environment: ["HOME": fixture.home, "XDG_STATE_HOME": "relative"]).get()
        #expect(config.stateDirectory == fixture.home + "/.local/state/tidesync")
    }

    @Test("the default configuration path follows XDG_CONFIG_HOME when it is absolute")
    func defaultPath() {
        #expect(ConfigLoader.defaultPath(environment: ["HOME": "/home/u", "XDG_CONFIG_HOME": "/cfg"]) == "/cfg/tidesync/config.toml")
        #expect(ConfigLoader.defaultPath(environment: ["HOME": "/home/u", "XDG_CONFIG_HOME": "cfg"]) == "/home/u/.config/tidesync/config.toml")
        #expect(ConfigLoader.defaultPath(environment: ["HOME": "/home/u"]) == "/home/u/.config/tidesync/config.toml")
    }

    @Test("plain http is accepted to loopback hosts, or when allowed explicitly", arguments: [
        ("http://127.0.0.1:8080/dav/", ""),
        ("http://127.1.2.3/dav/", ""),
        ("http://localhost/dav", ""),
        ("http://[::1]:8080/dav/", ""),
        ("http://cloud.example.com/dav/", "allow_insecure_http = true"),
    ])
    func plainHTTPAccepted(remote: String, extra: String) throws {
        let fixture = try ConfigFixture()
        let outcome = try fixture.check(domainTable(extra, remote: remote))
        #expect(outcome.standardError == [])
        #expect(outcome.exitCode == 0)
    }

    @Test("folders whose names share a prefix do not overlap")
    func siblingFoldersDoNotOverlap() throws {
        let fixture = try ConfigFixture()
        let config = try fixture.load("""
            [[domain]]
            name = "a"
            local = "/srv/sync/b"
            remote = "https://cloud.example.com/a/"

            [[domain]]
            name = "b"
            local = "/srv/sync/bc"
            remote = "https://cloud.example.com/b/"
            """)
        #expect(config.domains.map(\.localPath) == ["/srv/sync/b", "/srv/sync/bc"])
    }

    @Test("the shipped example and demo configurations are valid")
    func shippedConfigurations() throws {
        let fixture = try ConfigFixture()
        let repository = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let example = try ConfigLoader.load(path: repository + "/config/example.toml", environment: fixture.environment).get()
        #expect(example.domains.map(\.name) == ["home"])
        let demo = try ConfigLoader.load(path: repository + "/config/demo.toml", environment: fixture.environment).get()
        let domain = try #require(demo.domains.first)
        #expect(domain.localPath == repository + "/demo/Local")
        #expect(domain.remote == .localDirectory(repository + "/demo/Remote"))
    }
}
