import Foundation
import Testing
@testable import TidesyncConfig

/// The location a state DB records for a domain's remote (issue 13, item 2): spellings of
/// one remote compare equal, other remotes do not.
@Suite("Remote identity locations")
struct RemoteIdentityLocationTests {
    static func identity(_ text: String) throws -> String {
        try RemoteSyntax.parse(text, directory: "/etc/tidesync").get().identity
    }

    @Test("one remote, several spellings", arguments: [
        ("https://cloud.example.com/dav/", "https://cloud.example.com/dav/"),
        ("HTTPS://Cloud.Example.COM:443/dav", "https://cloud.example.com/dav/"),
        ("http://host:80/files/", "http://host/files/"),
        ("http://host:8080/files/", "http://host:8080/files/"),
        ("file:///srv/store", "file:///srv/store"),
        ("file:store", "file:///etc/tidesync/store"),
    ])
    func normalised(text: String, expected: String) throws {
        #expect(try Self.identity(text) == expected)
    }

    @Test("another collection, host or port is another remote")
    func different() throws {
        let base = try Self.identity("https://cloud.example.com/dav/a/")
        for other in ["https://cloud.example.com/dav/b/", "https://other.example.com/dav/a/", "https://cloud.example.com:8443/dav/a/",
                      "http://cloud.example.com/dav/a/"] {
            #expect(try Self.identity(other) != base, "\(other)")
        }
    }

    @Test("another account on the same URL is another remote; a local-directory store has no account")
    func account() throws {
        let remote = try RemoteSyntax.parse("https://dav.example.com/files/", directory: "/").get()
        func domain(_ user: String?, _ remote: RemoteLocation) -> DomainConfiguration {
            DomainConfiguration(name: "home", localPath: "/home/a/Cloud", remote: remote, username: user)
        }
        #expect(domain("alice", remote).remoteIdentity == "https://alice@dav.example.com/files/")
        #expect(domain("alice", remote).remoteIdentity != domain("bob", remote).remoteIdentity)
        #expect(domain("a@b c", remote).remoteIdentity == "https://a%40b%20c@dav.example.com/files/", "the name is escaped")
        #expect(domain(nil, remote).remoteIdentity == "https://dav.example.com/files/")
        let store = try RemoteSyntax.parse("file:///srv/store", directory: "/").get()
        #expect(domain("alice", store).remoteIdentity == "file:///srv/store")
    }
}
