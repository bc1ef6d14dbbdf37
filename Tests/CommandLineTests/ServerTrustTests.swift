import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A server with a self-signed certificate or one of a private CA: refused by default with a
/// message that names the certificate and the setting that fixes it (not "cannot reach the
/// server", retried forever), accepted with `certificate_sha256` or `ca_file`, refused again
/// when its certificate changes. A private Apache serving HTTPS (mod_ssl), the real binary,
/// certificates made by the real `openssl`.
@Suite("TLS: a server's own CA or an accepted certificate",
       .enabled(if: Binary.available, "set TIDESYNC_TEST_BINARY (packaging/test.sh does) to run the real binary"),
       .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs /usr/bin/openssl (package openssl)"))
struct ServerTrustTests {
    /// Certificates made for one test, in a folder of their own.
    struct Certificates {
        let folder = temporaryPath("tidesync-tls-")

        init() throws {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }

        func openssl(_ arguments: [String]) throws {
            let (status, _, errors) = try ChildProcess.collect("/usr/bin/openssl", arguments)
            guard status == 0 else { throw TestFailure("openssl \(arguments.first ?? "") failed: \(String(decoding: errors, as: UTF8.self))") }
        }

        /// A self-signed certificate for 127.0.0.1 named `name`: (certificate, key).
        func selfSigned(_ name: String) throws -> (certificate: String, key: String) {
            let (certificate, key) = ("\(folder)/\(name).pem", "\(folder)/\(name).key")
            try openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-days", "2",
                         "-subj", "/CN=tidesync \(name)", "-addext", "subjectAltName=IP:127.0.0.1"])
            return (certificate, key)
        }

        /// A CA, and a certificate for 127.0.0.1 it issued: (CA certificate, server certificate, server key).
        func issued() throws -> (ca: String, certificate: String, key: String) {
            let ca = folder + "/ca.pem", caKey = folder + "/ca.key"
            try openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", caKey, "-out", ca, "-days", "2",
                         "-subj", "/CN=tidesync test CA", "-addext", "basicConstraints=critical,CA:TRUE",
                         "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
            let key = folder + "/server.key", request = folder + "/server.csr", certificate = folder + "/server.pem"
            try openssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", request, "-subj", "/CN=127.0.0.1"])
            try Data("subjectAltName=IP:127.0.0.1\n".utf8).write(to: URL(fileURLWithPath: folder + "/san.ext"))
            try openssl(["x509", "-req", "-in", request, "-CA", ca, "-CAkey", caKey, "-CAcreateserial", "-out", certificate,
                         "-days", "2", "-extfile", folder + "/san.ext"])
            return (ca, certificate, key)
        }

        /// The certificate's SHA-256 fingerprint as `openssl` prints it (`AB:CD:…`).
        func fingerprint(_ certificate: String) throws -> String {
            let (status, output, _) = try ChildProcess.collect("/usr/bin/openssl", ["x509", "-noout", "-fingerprint", "-sha256", "-in", certificate])
            let text = String(decoding: output, as: UTF8.self)
            guard status == 0, let equals = text.firstIndex(of: "=") else { throw TestFailure("no fingerprint of \(certificate): \(text)") }
            return text[text.index(after: equals)...].trimmingCharacters(in: .whitespacesAndNewlines).uppercased()
        }
    }

    struct TestFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// A scratch home whose domain "st" syncs ~/Cloud with the HTTPS share of `apache`.
    struct Home {
        let home = temporaryPath("tidesync-tlshome-")
        let apache: PrivateApache
        let disk: String
        let url: String
        var local: String { home + "/Cloud" }

        init(_ apache: PrivateApache) throws {
            self.apache = apache
            let collection = try apache.collection()
            let origin = try #require(apache.tlsOrigin, "the private Apache serves no HTTPS")
            url = origin + "/dav-inf/c/"
            disk = collection.disk
            try FileManager.default.createDirectory(atPath: local, withIntermediateDirectories: true)
            try configure("")
        }

        /// Writes the config with `extra` lines in the domain's table.
        func configure(_ extra: String) throws {
            try FileManager.default.createDirectory(atPath: home + "/.config/tidesync", withIntermediateDirectories: true)
            let config = "[[domain]]\nname = \"st\"\nlocal = \"~/Cloud\"\nremote = \"\(url)\"\nusername = \"tidesync\"\n" + extra
            try Data(config.utf8).write(to: URL(fileURLWithPath: home + "/.config/tidesync/config.toml"))
        }

        func tidesync(_ arguments: [String]) async throws -> Binary.Result {
            try await Binary.run(Binary.path!, arguments, environment: [
                "HOME": home, "XDG_CONFIG_HOME": home + "/.config", "XDG_STATE_HOME": home + "/.state",
                "PATH": "/usr/bin:/bin", "TIDESYNC_PASSWORD_ST": apache.password,
            ])
        }

        func write(_ name: String) throws {
            try Data(name.utf8).write(to: URL(fileURLWithPath: local + "/" + name))
        }

        func onServer(_ name: String) -> Bool { FileManager.default.fileExists(atPath: disk + "/" + name) }
    }

    @Test("a self-signed certificate: refused and named by default, trusted with certificate_sha256, refused again once it changes")
    func selfSigned() async throws {
        let certificates = try Certificates()
        defer { try? FileManager.default.removeItem(atPath: certificates.folder) }
        let first = try certificates.selfSigned("first"), second = try certificates.selfSigned("second")
        let apache = try await PrivateApache.start(tls: first)
        defer { apache.stopAtEnd() }
        let home = try Home(apache)
        defer { try? FileManager.default.removeItem(atPath: home.home) }
        try home.write("a.txt")

        let refused = try await home.tidesync(["run", "--once"])
        let fingerprint = try certificates.fingerprint(first.certificate)
        #expect(refused.status != 0)
        #expect(refused.errors.contains("is not trusted") && refused.errors.contains("subject CN=tidesync first"), "\(refused.errors)")
        #expect(refused.errors.contains("SHA-256 \(fingerprint)"), "\(refused.errors)")
        let pin = fingerprint.replacingOccurrences(of: ":", with: "").lowercased()
        #expect(refused.errors.contains("certificate_sha256 = \"\(pin)\""), "\(refused.errors)")
        #expect(!refused.errors.contains("cannot reach the server"), "\(refused.errors)")
        #expect(!home.onServer("a.txt"))

        // As a user pastes it from the message (or from openssl, colons and all).
        try home.configure("certificate_sha256 = \"\(fingerprint)\"\n")
        let trusted = try await home.tidesync(["run", "--once"])
        #expect(trusted.status == 0, "\(trusted.errors)")
        #expect(home.onServer("a.txt"))

        try await apache.replaceCertificate(second)
        try home.write("b.txt")
        let changed = try await home.tidesync(["run", "--once"])
        #expect(changed.status != 0)
        #expect(changed.errors.contains("SHA-256 \(try certificates.fingerprint(second.certificate))"), "\(changed.errors)")
        #expect(changed.errors.contains("certificate_sha256 names another certificate"), "\(changed.errors)")
        #expect(!home.onServer("b.txt"))
        try await apache.stop()
    }

    @Test("a private CA's certificate: refused by default, trusted with ca_file; certificate_sha256 of it points to ca_file")
    func privateCA() async throws {
        let certificates = try Certificates()
        defer { try? FileManager.default.removeItem(atPath: certificates.folder) }
        let issued = try certificates.issued()
        let apache = try await PrivateApache.start(tls: (issued.certificate, issued.key))
        defer { apache.stopAtEnd() }
        let home = try Home(apache)
        defer { try? FileManager.default.removeItem(atPath: home.home) }
        try home.write("a.txt")

        let refused = try await home.tidesync(["run", "--once"])
        #expect(refused.status != 0)
        #expect(refused.errors.contains("issuer CN=tidesync test CA"), "\(refused.errors)")
        #expect(refused.errors.contains("set ca_file"), "\(refused.errors)")

        let leaf = try certificates.fingerprint(issued.certificate)
        try home.configure("certificate_sha256 = \"\(leaf)\"\n")
        let pinnedLeaf = try await home.tidesync(["run", "--once"])
        #expect(pinnedLeaf.status != 0)
        #expect(pinnedLeaf.errors.contains("is issued by CN=tidesync test CA; set ca_file"), "\(pinnedLeaf.errors)")
        #expect(!home.onServer("a.txt"))

        try home.configure("ca_file = \"\(issued.ca)\"\n")
        let trusted = try await home.tidesync(["run", "--once"])
        #expect(trusted.status == 0, "\(trusted.errors)")
        #expect(home.onServer("a.txt"))
        try await apache.stop()
    }

    @Test("check-config refuses a ca_file that holds no certificate, a malformed certificate_sha256, and either on http")
    func badSettings() async throws {
        let home = temporaryPath("tidesync-tlscfg-")
        defer { try? FileManager.default.removeItem(atPath: home) }
        try FileManager.default.createDirectory(atPath: home + "/Cloud", withIntermediateDirectories: true)
        try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: home + "/bogus.pem"))
        let cases: [(remote: String, extra: String, expected: String)] = [
            ("https://dav.example.com/", "ca_file = \"\(home)/bogus.pem\"", "holds no certificate"),
            ("https://dav.example.com/", "ca_file = \"\(home)/missing.pem\"", "cannot be read"),
            ("https://dav.example.com/", "certificate_sha256 = \"12:34\"", "64 hex digits"),
            ("http://127.0.0.1:9/", "certificate_sha256 = \"\(String(repeating: "ab", count: 32))\"", "applies to https:// remotes only"),
        ]
        for (remote, extra, expected) in cases {
            let config = home + "/config.toml"
            try Data("[[domain]]\nname = \"st\"\nlocal = \"\(home)/Cloud\"\nremote = \"\(remote)\"\n\(extra)\n".utf8)
                .write(to: URL(fileURLWithPath: config))
            let result = try await Binary.run(["check-config", "--config", config], home: home)
            #expect(result.status == 1, "\(extra): \(result.output) \(result.errors)")
            #expect((result.output + result.errors).contains(expected), "\(extra): \(result.output) \(result.errors)")
        }
    }
}
