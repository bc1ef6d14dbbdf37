import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Whether a tidesync package is installed on this machine (the test never replaces one).
enum InstalledPackage {
    static var present: Bool {
        let query = try? ChildProcess.collect("/usr/bin/dpkg-query", ["-W", "-f=${Status}", "tidesync"])
        return String(decoding: query?.output ?? Data(), as: UTF8.self) == "install ok installed"
    }
}

/// `packaging/deb/build-deb.sh` makes a package apt-get installs: the binary, man page,
/// completions, user unit, example config and exclude list in their Debian places, with
/// `Depends:` computed; the installed `tidesync` runs and reads the installed example; the
/// package is removed cleanly; lintian finds no error and no warning in it. It packages the
/// test run's own binary (which loads the Swift runtime from the toolchain,
/// `--toolchain-libraries`; the packaged copy has its RUNPATH removed, so the installed
/// binary is run with `LD_LIBRARY_PATH` naming the toolchain's folder): the release package
/// is the same script with a release build, which the suite does not make (it takes minutes).
@Suite("the Debian package",
       .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"),
       .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/dpkg-shlibdeps"), "needs dpkg-shlibdeps (package dpkg-dev)"),
       .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/patchelf"), "needs patchelf (packaging/install-deps.sh installs it)"))
struct DebianPackageTests {
    static let installed = [
        "/usr/bin/tidesync", "/usr/share/man/man1/tidesync.1.gz", "/usr/share/bash-completion/completions/tidesync",
        "/usr/share/zsh/vendor-completions/_tidesync", "/usr/share/fish/vendor_completions.d/tidesync.fish",
        "/usr/lib/systemd/user/tidesync.service", "/usr/share/doc/tidesync/examples/config.toml",
        "/usr/share/tidesync/exclude.default", "/usr/share/doc/tidesync/copyright",
    ]

    static func apt(_ arguments: [String]) async throws -> Binary.Result {
        try await Binary.run("/usr/bin/apt-get", arguments, environment: [
            "DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        ])
    }

    /// Builds the test package of the test run's binary into `out`; its file name.
    static func build(into out: String) async throws -> String {
        let built = try await Binary.run("/bin/bash", [DaemonFixture.repository + "/packaging/deb/build-deb.sh",
                                                       "--binary", Binary.path!, "--toolchain-libraries", "--out", out],
                                         environment: ["PATH": "/opt/swift/usr/bin:/usr/sbin:/usr/bin:/sbin:/bin"])
        #expect(built.status == 0, "build-deb.sh: \(built.errors)")
        return try #require(try FileManager.default.contentsOfDirectory(atPath: out).first { $0.hasSuffix(".deb") })
    }

    /// The folders of the test run's binary's RUNPATH (the toolchain's Swift runtime), as
    /// `LD_LIBRARY_PATH` for the packaged copy, which has none.
    static func toolchainLibraries() throws -> String {
        let rpath = try ChildProcess.collect("/usr/bin/patchelf", ["--print-rpath", Binary.path!])
        return String(decoding: rpath.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            .split(separator: ":").filter { !$0.hasPrefix("$") }.joined(separator: ":")
    }

    @Test("lintian finds no error and no warning in the package (packaging/deb/lintian.sh; overrides only in the package, with reasons)",
          .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/lintian"), "lintian is not installed (apt-get install lintian): the package is not checked"))
    func lintianIsClean() async throws {
        let out = temporaryPath("tidesync-deb-lint-")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let package = try await Self.build(into: out)
        let lint = try await Binary.run("/bin/bash", [DaemonFixture.repository + "/packaging/deb/lintian.sh", out + "/" + package],
                                        environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"])
        #expect(lint.status == 0 && lint.output.contains("no error or warning"), "lintian: \(lint.output) \(lint.errors)")
    }

    @Test("apt-get installs the package; tidesync --version and check-config of the example work; apt-get removes it all",
          .enabled(if: getuid() == 0, "installs a package with apt-get: needs root"),
          .enabled(if: !InstalledPackage.present, "a tidesync package is installed on this machine; the test never replaces it"))
    func installAndRemove() async throws {
        let out = temporaryPath("tidesync-deb-")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let package = try await Self.build(into: out)
        let libraries = try Self.toolchainLibraries()
        #expect(!libraries.isEmpty, "the test run's binary names no toolchain folder in its RUNPATH")
        let fields = try await Binary.run("/usr/bin/dpkg-deb", ["-f", out + "/" + package, "Depends", "Version"], environment: nil)
        // Computed from the binary: SQLite (GRDB) and the C library at least.
        #expect(fields.output.contains("libsqlite3-0") && fields.output.contains("libc6"), "Depends: \(fields.output)")

        let install = try await Self.apt(["install", "-y", "--no-install-recommends", out + "/" + package])
        // Only when the test stopped before its own `apt-get remove`: this blocks one of the
        // test process's few threads for as long as apt-get runs (a needless second remove
        // once held one beside a test whose cancel was waiting its turn).
        defer {
            if InstalledPackage.present {
                _ = try? ChildProcess.collect("/usr/bin/apt-get", ["remove", "-y", "tidesync"],
                                              environment: ["DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"])
            }
        }
        #expect(install.status == 0, "apt-get install: \(install.output) \(install.errors)")
        for path in Self.installed {
            #expect(FileManager.default.fileExists(atPath: path), "\(path) is not installed")
        }
        #expect(readFile("/usr/lib/systemd/user/tidesync.service")?.contains("ExecStart=/usr/bin/tidesync run") == true)
        let version = try await Binary.run("/usr/bin/tidesync", ["--version"], environment: ["PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": libraries])
        let ours = try await Binary.run(Binary.path!, ["--version"], environment: ["PATH": "/usr/bin:/bin"])
        #expect(version.status == 0 && version.output == ours.output && fields.output.contains(ours.output.split(separator: " ")[1]),
                "installed: \(version.output) \(version.errors); built: \(ours.output); package: \(fields.output)")
        let home = temporaryPath("tidesync-deb-home-")
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: home) }
        let check = try await Binary.run("/usr/bin/tidesync", ["check-config", "--config", "/usr/share/doc/tidesync/examples/config.toml"],
                                         environment: ["HOME": home, "PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": libraries])
        #expect(check.status == 0, "check-config of the installed example: \(check.output) \(check.errors)")

        let remove = try await Self.apt(["remove", "-y", "tidesync"])
        #expect(remove.status == 0, "apt-get remove: \(remove.output) \(remove.errors)")
        for path in Self.installed {
            #expect(!FileManager.default.fileExists(atPath: path), "\(path) is left after apt-get remove")
        }
    }
}
