import Foundation

/// Parses the `remote` key: an `https:` or `http:` WebDAV URL, or a `file:`
/// URL naming a directory (`file:///absolute/path`, or `file:relative/path`
/// resolved against the configuration file's directory). Pure.
enum RemoteSyntax {
    /// The schemes `remote` may use.
    static let schemes = ["https", "http", "file"]

    static func parse(_ text: String, directory: String) -> Result<RemoteLocation, RemoteProblem> {
        let shown = redacted(text)
        guard let scheme = scheme(of: text) else { return .failure(.notURL(shown)) }
        guard schemes.contains(scheme) else { return .failure(.unsupportedScheme(shown, scheme: scheme)) }
        if scheme == "file" {
            return fileLocation(text, directory: directory).map(RemoteLocation.localDirectory)
        }
        return webDAVLocation(text).map(RemoteLocation.webDAV)
    }

    /// The lower-cased scheme, if `text` starts with one followed by `:`.
    private static func scheme(of text: String) -> String? {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let scheme = text[..<colon]
        guard let first = scheme.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic,
              scheme.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "+-.".unicodeScalars.contains($0)) })
        else { return nil }
        return scheme.lowercased()
    }

    /// `text` with everything between `://` and the last `@` hidden, so that no
    /// user information, and so no password, is ever shown. This may also hide
    /// part of a path that contains `@`; it is only used in messages.
    static func redacted(_ text: String) -> String {
        guard let separator = text.range(of: "://"), let at = text.lastIndex(of: "@"),
              at >= separator.upperBound
        else { return text }
        return String(text[..<separator.upperBound]) + "***" + String(text[at...])
    }

    private static func webDAVLocation(_ text: String) -> Result<URL, RemoteProblem> {
        let shown = redacted(text)
        guard var components = URLComponents(string: text) else {
            // An unparsable URL with an "@" most likely holds a password with unencoded characters.
            return .failure(shown == text ? .invalid(text) : .credentials(shown, username: nil))
        }
        if components.user != nil || components.password != nil {
            let user = components.user.flatMap { $0.isEmpty ? nil : $0 }
            return .failure(.credentials(shown, username: user))
        }
        // From here on the URL holds no user information and may be shown in full.
        guard let host = components.host, !host.isEmpty else { return .failure(.noHost(text)) }
        guard components.query == nil, components.fragment == nil else { return .failure(.queryOrFragment(text)) }
        components.scheme = components.scheme?.lowercased()
        if !components.path.hasSuffix("/") { components.path += "/" }
        guard let url = components.url else { return .failure(.invalid(text)) }
        return .success(url)
    }

    private static func fileLocation(_ text: String, directory: String) -> Result<String, RemoteProblem> {
        var rest = Substring(text).dropFirst("file:".count)
        if rest.hasPrefix("//") {
            rest = rest.dropFirst(2)
            let slash = rest.firstIndex(of: "/") ?? rest.endIndex
            let host = rest[..<slash].lowercased()
            guard host.isEmpty || host == "localhost" else { return .failure(.badFileURL(redacted(text))) }
            rest = rest[slash...]
        }
        guard !rest.isEmpty, !rest.hasPrefix("~"), let path = String(rest).removingPercentEncoding, !path.isEmpty
        else { return .failure(.badFileURL(redacted(text))) }
        return .success(path.hasPrefix("/") ? PathSyntax.standardize(path) : PathSyntax.join(directory, path))
    }

    /// Whether `host` names this machine: `localhost`, 127.0.0.0/8 or ::1.
    static func isLoopback(_ host: String) -> Bool {
        var name = host.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name == "localhost" || name == "localhost." { return true }
        let octets = name.split(separator: ".", omittingEmptySubsequences: false)
        if octets.count == 4, octets.allSatisfy({ $0.count <= 3 && UInt8($0) != nil }) {
            return octets[0] == "127"
        }
        return isIPv6Loopback(name)
    }

    private static func isIPv6Loopback(_ address: String) -> Bool {
        let halves = address.components(separatedBy: "::")
        guard address.contains(":"), halves.count <= 2,
              let head = hexGroups(halves[0]), let tail = halves.count == 2 ? hexGroups(halves[1]) : []
        else { return false }
        let written = head + tail
        guard halves.count == 2 ? written.count < 8 : written.count == 8 else { return false }
        let groups = head + Array(repeating: 0, count: 8 - written.count) + tail
        return groups == [0, 0, 0, 0, 0, 0, 0, 1]
    }

    private static func hexGroups(_ text: String) -> [UInt16]? {
        guard !text.isEmpty else { return [] }
        var groups: [UInt16] = []
        for group in text.split(separator: ":", omittingEmptySubsequences: false) {
            guard (1...4).contains(group.count), let value = UInt16(group, radix: 16) else { return nil }
            groups.append(value)
        }
        return groups
    }
}

/// Why a `remote` value was rejected. Every URL in it has been through
/// ``RemoteSyntax/redacted(_:)``.
enum RemoteProblem: Error, Equatable {
    case notURL(String)
    case unsupportedScheme(String, scheme: String)
    case invalid(String)
    case noHost(String)
    case credentials(String, username: String?)
    case queryOrFragment(String)
    case badFileURL(String)

    /// The message, without the domain label.
    var message: String {
        let q = { (text: String) in DiagnosticWording.quoted(text) }
        switch self {
        case .notURL(let shown):
            return "remote \(q(shown)) is not a URL; write e.g. \"https://cloud.example.com/remote.php/dav/files/USER/\" "
                + "for a WebDAV server or \"file:///srv/store\" for a directory."
        case .unsupportedScheme(let shown, let scheme):
            return "remote \(q(shown)) has scheme \(q(scheme)), which tidesync does not support; use an https:// or "
                + "http:// URL (WebDAV) or a file: URL (a directory)."
        case .invalid(let shown):
            return "remote \(q(shown)) is not a valid URL; check it for spaces or other characters that must be "
                + "percent-encoded."
        case .noHost(let shown):
            return "remote \(q(shown)) has no host name; write e.g. \"https://cloud.example.com/remote.php/dav/files/USER/\"."
        case .credentials(let shown, let username):
            let user = username.map { "username = \(q($0))" } ?? "username"
            return "remote \(q(shown)) contains credentials; remove them from the URL and set \(user) with "
                + "password_command or password_file instead."
        case .queryOrFragment(let shown):
            return "remote \(q(shown)) has a query or fragment (\"?…\" or \"#…\"); remove it: remote is the URL of a "
                + "WebDAV folder."
        case .badFileURL(let shown):
            return "remote \(q(shown)) is not a usable file: URL; write file:///absolute/path, or file:relative/path "
                + "for a folder relative to the directory of this file."
        }
    }
}
