import Foundation
import TOMLKit

/// What was read of one `[[domain]]`, complete or not, for the checks across domains.
struct DomainDraft {
    var index: Int
    var label: String
    var name: String?
    var localPath: String?
    /// The remote's directory, for a `file:` remote.
    var remoteDirectory: String?
    /// Set when the name, local folder and remote were all valid.
    var configuration: DomainConfiguration?
}

/// Reading `[[domain]]` tables.
extension ConfigValidator {
    mutating func readDomains(_ root: TOMLTable) -> [DomainDraft] {
        guard let value = root["domain"] else {
            error(
                "no domain is configured; add a [[domain]] table with name, local and remote for each folder to "
                    + "sync (see config/example.toml).",
                at: nil
            )
            return []
        }
        guard let array = value.array, !array.isEmpty else {
            typeError("domain", value, in: .topLevel, expected: "one or more [[domain]] tables (double brackets)")
            return []
        }
        var drafts: [DomainDraft] = []
        for (index, element) in array.enumerated() {
            guard let table = element.table else {
                error(
                    "domain[\(index)] must be a table, found \(DiagnosticWording.found(element)); write each domain as a "
                        + "[[domain]] table.",
                    at: sourceMap.value(["domain", "[\(index)]"])
                )
                continue
            }
            drafts.append(readDomain(table, index: index))
        }
        return drafts
    }

    private mutating func readDomain(_ table: TOMLTable, index: Int) -> DomainDraft {
        let path = ["domain", "[\(index)]"]
        var scope = KeyScope(path: path, label: "domain #\(index + 1)", keyPrefix: "", place: "in [[domain]] #\(index + 1)")
        let name = readName(table, in: scope)
        if let name {
            scope.label = "domain \(DiagnosticWording.quoted(name))"
            scope.place = "in [[domain]] \(DiagnosticWording.quoted(name))"
        }
        checkKeys(table, allowed: Self.domainKeys, in: scope, misplaced: misplacedInDomain(scope, name: name, inPlaceholders: false))
        let local = requiredPath(table, "local", in: scope, example: "local = \"~/Cloud\"")
        let remote = readRemote(table, in: scope)
        var draft = DomainDraft(index: index, label: scope.label, name: name, localPath: local)
        if case .localDirectory(let directory)? = remote { draft.remoteDirectory = directory }
        var domain = DomainConfiguration(name: name ?? "", localPath: local ?? "/", remote: remote ?? .localDirectory("/"))
        readConnection(table, in: scope, into: &domain, remoteIsValid: remote != nil)
        readTuning(table, in: scope, into: &domain)
        domain.placeholders = readPlaceholders(table, in: scope)
        noteSettingsNotInEffect(table, domain: domain, in: scope)
        if name != nil, local != nil, remote != nil { draft.configuration = domain }
        return draft
    }

    private mutating func readName(_ table: TOMLTable, in scope: KeyScope) -> String? {
        guard let name = requiredString(table, "name", in: scope, example: "name = \"home\"") else { return nil }
        let allowed = name.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-")
        }
        guard allowed, (1...64).contains(name.unicodeScalars.count) else {
            valueError(
                "\(written("name", name, in: scope)) is not a valid name; use 1 to 64 letters, digits, \"_\" and \"-\" "
                    + "(it names the state database and the password variable), e.g. \"home\".",
                key: "name", in: scope
            )
            return nil
        }
        return name
    }

    private mutating func requiredPath(_ table: TOMLTable, _ key: String, in scope: KeyScope, example: String) -> String? {
        guard requiredString(table, key, in: scope, example: example) != nil else { return nil }
        return path(table, key, in: scope)
    }

    private mutating func readRemote(_ table: TOMLTable, in scope: KeyScope) -> RemoteLocation? {
        let example = "remote = \"https://cloud.example.com/remote.php/dav/files/USER/\""
        guard let text = requiredString(table, "remote", in: scope, example: example) else { return nil }
        switch RemoteSyntax.parse(text, directory: baseDirectory) {
        case .success(let location):
            return location
        case .failure(let problem):
            valueError(problem.message, key: "remote", in: scope)
            return nil
        }
    }

    /// `username`, the password source and `allow_insecure_http`.
    private mutating func readConnection(
        _ table: TOMLTable, in scope: KeyScope, into domain: inout DomainConfiguration, remoteIsValid: Bool
    ) {
        domain.username = string(table, "username", in: scope)
        if let credentials = readCredentials(table, in: scope) { domain.credentials = credentials }
        domain.allowInsecureHTTP = bool(table, "allow_insecure_http", in: scope) ?? false
        readTrust(table, in: scope, into: &domain, remoteIsValid: remoteIsValid)
        guard remoteIsValid, case .webDAV(let url) = domain.remote else { return }
        let host = url.host ?? ""
        if url.scheme == "http", !domain.allowInsecureHTTP, !RemoteSyntax.isLoopback(host) {
            valueError(
                "remote \(DiagnosticWording.quoted(url.absoluteString)) uses plain http to \(host), which is not this "
                    + "machine, so your password and files would cross the network unencrypted; use https://, or set "
                    + "allow_insecure_http = true to accept that.",
                key: "remote", in: scope
            )
        }
        let explicitPassword = table.contains(key: "password_command") || table.contains(key: "password_file")
        if explicitPassword, !table.contains(key: "username") {
            error(
                "\(scope.subject)a password source is set but username is not; add username = \"…\" with your "
                    + "account name on the server.",
                at: sourceMap.key(scope.path)
            )
        }
    }

    /// `ca_file` and `certificate_sha256`, for `https://` remotes only.
    private mutating func readTrust(_ table: TOMLTable, in scope: KeyScope, into domain: inout DomainConfiguration,
                                    remoteIsValid: Bool) {
        if let file = path(table, "ca_file", in: scope) {
            if let problem = Self.pemProblem(file) {
                valueError("ca_file \(DiagnosticWording.quoted(file)) \(problem); give a PEM file of your server's CA certificate "
                    + "(the text between -----BEGIN CERTIFICATE----- and -----END CERTIFICATE-----).", key: "ca_file", in: scope)
            } else {
                domain.caFile = file
            }
        }
        if let text = string(table, "certificate_sha256", in: scope) {
            let hex = text.lowercased().filter { $0 != ":" && !$0.isWhitespace }
            if hex.count == 64, hex.allSatisfy(\.isHexDigit) {
                domain.certificateSHA256 = hex
            } else {
                valueError("certificate_sha256 must be the certificate's SHA-256 fingerprint: 64 hex digits, colons allowed "
                    + "(openssl x509 -noout -fingerprint -sha256 -in cert.pem prints it).", key: "certificate_sha256", in: scope)
            }
        }
        guard remoteIsValid, domain.caFile != nil || domain.certificateSHA256 != nil else { return }
        if case .webDAV(let url) = domain.remote, url.scheme == "https" { return }
        let key = domain.caFile != nil ? "ca_file" : "certificate_sha256"
        valueError("\(key) applies to https:// remotes only; remove it, or use an https:// remote.", key: key, in: scope)
    }

    /// Why `file` is no PEM certificate file, or nil when it holds at least one.
    static func pemProblem(_ file: String) -> String? {
        guard let data = FileManager.default.contents(atPath: file) else { return "cannot be read" }
        guard data.count < 16 << 20, let text = String(data: data, encoding: .utf8) else { return "is not a text file" }
        return text.contains("-----BEGIN CERTIFICATE-----") ? nil : "holds no certificate"
    }

    private mutating func readCredentials(_ table: TOMLTable, in scope: KeyScope) -> CredentialSource? {
        let command = string(table, "password_command", in: scope)
        let file = path(table, "password_file", in: scope)
        if table.contains(key: "password_command"), table.contains(key: "password_file") {
            let positions = ["password_command", "password_file"].compactMap { sourceMap.key(scope.path($0)) }
            error(
                "\(scope.subject)password_command and password_file are both set; keep one of them and remove the other.",
                at: positions.max { ($0.line, $0.column) < ($1.line, $1.column) }
            )
            return nil
        }
        if let command {
            guard !command.allSatisfy(\.isWhitespace) else {
                valueError("password_command is empty; write the command that prints the password.", key: "password_command", in: scope)
                return nil
            }
            return .command(command)
        }
        guard let file else { return nil }
        checkPasswordFile(file, in: scope)
        return .file(path: file)
    }

    private mutating func checkPasswordFile(_ file: String, in scope: KeyScope) {
        let shown = "password_file \(DiagnosticWording.quoted(file))"
        let chmod = "chmod 600 \(ShellQuoting.quote(file))"
        let problem: String
        switch PasswordFileStatus(path: file) {
        case .usable: return
        case .missing: problem = "\(shown) does not exist; create it with the password on one line and run \(chmod)."
        case .notRegularFile: problem = "\(shown) is not a regular file; point password_file at a file holding the password."
        case .unreadable: problem = "\(shown) cannot be read by this user; run tidesync as the file's owner."
        case .tooOpen(let mode):
            problem = "\(shown) has mode \(PasswordFileStatus.octal(mode)), so other users can read or change it; run \(chmod)."
        }
        valueError(problem, key: "password_file", in: scope)
    }
}
