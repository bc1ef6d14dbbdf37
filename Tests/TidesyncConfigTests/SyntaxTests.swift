import Foundation
import Testing
@testable import TidesyncConfig

@Suite("Durations, sizes, hosts and source positions")
struct SyntaxTests {
    @Test("durations", arguments: [
        ("30s", Duration.seconds(30)), ("250ms", .milliseconds(250)), ("5m", .seconds(300)),
        ("1h30m", .seconds(5400)), ("2d", .seconds(172_800)), ("0s", .zero),
    ])
    func durations(text: String, expected: Duration) {
        #expect(DurationSyntax.parse(text) == expected)
    }

    @Test("not durations", arguments: ["", "30", "30 s", "30 seconds", "1.5h", "-5s", "5S", "s", "h1", "99999999999999999999s"])
    func notDurations(text: String) {
        #expect(DurationSyntax.parse(text) == nil)
    }

    @Test("sizes", arguments: [
        ("16MiB", Int64(16 << 20)), ("4KiB", 4096), ("1GiB", 1 << 30), ("512B", 512), ("16MB", 16_000_000),
        ("4096", 4096), ("1TiB", 1 << 40),
    ])
    func sizes(text: String, bytes: Int64) {
        #expect(ByteCount(parsing: text) == ByteCount(bytes))
    }

    @Test("not sizes", arguments: ["", "MiB", "16 MiB", "1.5GiB", "-1", "16mib", "16Q", "99999999999TiB"])
    func notSizes(text: String) {
        #expect(ByteCount(parsing: text) == nil)
    }

    @Test("sizes print in the largest exact binary unit")
    func sizeDescription() {
        #expect(ByteCount(1 << 20).description == "1MiB")
        #expect(ByteCount(6144).description == "6KiB")
        #expect(ByteCount(1000).description == "1000B")
    }

    @Test("loopback hosts", arguments: [
        ("localhost", true), ("LOCALHOST", true), ("127.0.0.1", true), ("127.255.0.9", true), ("::1", true),
        ("[::1]", true), ("0:0:0:0:0:0:0:1", true), ("128.0.0.1", false), ("127.0.0.1.example.com", false),
        ("::", false), ("1::", false), ("cloud.example.com", false), ("localhost.example.com", false),
    ])
    func loopback(host: String, expected: Bool) {
        #expect(RemoteSyntax.isLoopback(host) == expected)
    }

    @Test("file: remotes", arguments: [
        ("file:///srv/store", "/srv/store"), ("file://localhost/srv/a%20b", "/srv/a b"),
        ("file:/srv/store/", "/srv/store"), ("file:../store", "/etc/store"), ("file:store/x", "/etc/tidesync/store/x"),
    ])
    func fileRemotes(text: String, path: String) throws {
        #expect(try RemoteSyntax.parse(text, directory: "/etc/tidesync").get() == .localDirectory(path))
    }

    @Test("the source map finds keys in dotted, quoted and inline forms and skips strings")
    func sourceMap() {
        let map = SourceMap(text: """
            text = \"\"\"
            [[domain]]
            name = "not a key"
            \"\"\"
            list = [
              "a", # comment
              { inner = 1 },
            ]
            [[domain]]
            placeholders.mode = "auto"
            "quoted key" = 'x'
            [ domain . placeholders ]
            min_size = 1
            [[domain]]
            """)
        #expect(map.key(["domain", "[0]"]) == .init(line: 9, column: 1))
        #expect(map.key(["domain", "[0]", "placeholders"]) == .init(line: 10, column: 1))
        #expect(map.value(["domain", "[0]", "placeholders", "mode"]) == .init(line: 10, column: 21))
        #expect(map.key(["domain", "[0]", "quoted key"]) == .init(line: 11, column: 1))
        #expect(map.key(["domain", "[0]", "placeholders", "min_size"]) == .init(line: 13, column: 1))
        #expect(map.value(["list", "[1]", "inner"]) == .init(line: 7, column: 13))
        #expect(map.key(["domain", "[1]"]) == .init(line: 14, column: 1))
        #expect(map.key(["domain", "[1]", "name"]) == .init(line: 14, column: 1))
        #expect(map.key(["domain", "[0]", "name"]) == .init(line: 9, column: 1))
    }
}
