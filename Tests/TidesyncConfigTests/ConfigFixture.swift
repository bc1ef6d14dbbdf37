import Foundation
import TestSupport
@testable import TidesyncConfig

/// A temporary directory holding a configuration file and whatever it points
/// at, with an environment whose HOME and XDG directories lie inside it.
/// Removed when the fixture goes away.
final class ConfigFixture {
    let directory: String

    init() throws {
        directory = temporaryPath("tidesync-config-tests-")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    var home: String { directory + "/home" }

    var environment: [String: String] {
        ["HOME": home, "XDG_STATE_HOME": directory + "/state", "XDG_RUNTIME_DIR": directory + "/run"]
    }

    /// The path of `name` inside the fixture.
    func path(_ name: String = "config.toml") -> String { directory + "/" + name }

    /// Writes `text` to `name` with `mode`, and returns its path.
    @discardableResult
    func write(_ text: String, to name: String = "config.toml", mode: Int = 0o600) throws -> String {
        let path = path(name)
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true
        )
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    /// Runs check-config on `text` written to config.toml.
    func check(_ text: String) throws -> ConfigCheck.Outcome {
        try ConfigCheck.run(configPath: write(text), environment: environment)
    }

    /// The error lines check-config prints for `text`.
    func errors(_ text: String) throws -> [String] {
        try check(text).standardError
    }

    /// Loads `text` written to config.toml.
    func load(_ text: String) throws -> TidesyncConfiguration {
        try ConfigLoader.load(path: write(text), environment: environment).get()
    }
}

/// A [[domain]] table with a valid name, local folder and remote on lines
/// 1 to 4, followed by `lines` from line 5 on.
func domainTable(_ lines: String = "", name: String = "home", remote: String = "https://cloud.example.com/dav/") -> String {
    """
    [[domain]]
    name = "\(name)"
    local = "~/Cloud"
    remote = "\(remote)"
    \(lines)
    """
}
