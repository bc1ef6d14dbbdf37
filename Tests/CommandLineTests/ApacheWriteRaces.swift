import Foundation
import Testing
import TestSupport

/// Two PUTs of one path that Apache answered 2xx although both carried the same `If-Match`
/// (or both `If-None-Match: *`) and their times overlap. mod_dav checks `If-Match` before it reads the body and holds
/// nothing while it writes (each body goes to its own `.davfs.tmp*` and is renamed over the
/// target at the end), so both land and the first one's version is gone without a word to
/// either client. No client can see it happen; the README states the limit, and the
/// contract test "two clients replacing one file at once from the same version" records
/// it as a known issue. The private Apache logs every write with when it began and ended
/// and its `If-Match` (`writes.log`, packaging/dav-server.sh), so a test can tell a loss
/// this race explains from one it does not.
struct ApacheWriteRace: CustomStringConvertible {
    /// The path below the collection, decoded.
    var path: String
    /// The condition both carried ("If-Match: <etag>" or "If-None-Match: *").
    var condition: String
    /// When each write began and ended, in µs since the epoch.
    var first: ClosedRange<Int64>
    var second: ClosedRange<Int64>

    var description: String {
        "two PUTs of \(path) with \(condition) overlapped (µs \(first.lowerBound)…\(first.upperBound) and \(second.lowerBound)…\(second.upperBound)) and both landed"
    }

    /// One line of `writes.log`: `BEGIN END STATUS METHOD-TARGET-PROTOCOL IF-MATCH
    /// IF-NONE-MATCH`, tab-separated ("-" for a header not sent; Apache writes a quote
    /// in a header as `\"`).
    private struct Write {
        var span: ClosedRange<Int64>
        var path: String
        /// "If-Match: <etag>" or "If-None-Match: *": the version the write was based on.
        var condition: String

        init?(_ line: Substring, collection: String) {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 6, let begin = Int64(fields[0]), let end = Int64(fields[1]), begin <= end,
                  let status = Int(fields[2]), (200..<300).contains(status) else { return nil }
            let request = fields[3].split(separator: " ")
            guard request.count == 3, request[0] == "PUT", let target = String(request[1]).removingPercentEncoding,
                  target.hasPrefix(collection) else { return nil }
            let ifMatch = fields[4].replacingOccurrences(of: "\\", with: "")
            if ifMatch != "-" {
                condition = "If-Match: " + (ifMatch.hasPrefix("W/") ? String(ifMatch.dropFirst(2)) : ifMatch)
            } else if fields[5] == "*" {
                condition = "If-None-Match: *"
            } else {
                return nil
            }
            span = begin...end
            path = String(target.dropFirst(collection.count))
        }
    }

    /// The races in `log` below the collection whose URL path is `collection` (ending in "/").
    static func find(in log: String, collection: String) -> [ApacheWriteRace] {
        let writes = log.split(separator: "\n").compactMap { Write($0, collection: collection) }
        var races: [ApacheWriteRace] = []
        for (_, group) in Dictionary(grouping: writes, by: { $0.path + "\u{0}" + $0.condition }) {
            let sorted = group.sorted { $0.span.lowerBound < $1.span.lowerBound }
            for (index, write) in sorted.enumerated() {
                for later in sorted[(index + 1)...] where later.span.lowerBound <= write.span.upperBound {
                    races.append(ApacheWriteRace(path: write.path, condition: write.condition, first: write.span, second: later.span))
                }
            }
        }
        return races.sorted { ($0.first.lowerBound, $0.path) < ($1.first.lowerBound, $1.path) }
    }

    /// The races in the private Apache's `writes.log` below the collection at `url`; empty
    /// when there is no such log (another store).
    static func find(url: String) -> [ApacheWriteRace] {
        guard let accessLog = TestApache.accessLog, let collection = URL(string: url)?.path,
              let log = readFile((accessLog as NSString).deletingLastPathComponent + "/writes.log") else { return [] }
        return find(in: log, collection: collection.hasSuffix("/") ? collection : collection + "/")
    }
}

@Suite("ApacheWriteRace: overlapping PUTs from one version in the private Apache's writes log")
struct ApacheWriteRaceTests {
    @Test("only two landed PUTs of one path from one version whose times overlap are a race")
    func overlapsOnly() {
        let log = [
            "100\t200\t204\tPUT /dav/c/a%20b.txt HTTP/1.1\t\\\"29-1\\\"\t-",
            "150\t250\t204\tPUT /dav/c/a%20b.txt HTTP/1.1\tW/\\\"29-1\\\"\t-",
            "251\t400\t204\tPUT /dav/c/a%20b.txt HTTP/1.1\t\\\"29-1\\\"\t-",
            "100\t200\t412\tPUT /dav/c/x.txt HTTP/1.1\t\\\"1\\\"\t-",
            "120\t220\t204\tPUT /dav/c/x.txt HTTP/1.1\t\\\"1\\\"\t-",
            "100\t200\t201\tPUT /dav/c/n.txt HTTP/1.1\t-\t*",
            "110\t210\t201\tPUT /dav/c/n.txt HTTP/1.1\t-\t*",
            "100\t200\t204\tPUT /dav/c/u.txt HTTP/1.1\t-\t-",
            "110\t210\t204\tPUT /dav/c/u.txt HTTP/1.1\t-\t-",
            "100\t200\t204\tPUT /dav/c/y.txt HTTP/1.1\t\\\"1\\\"\t-",
            "120\t220\t204\tPUT /dav/c/y.txt HTTP/1.1\t\\\"2\\\"\t-",
            "100\t200\t204\tMOVE /dav/c/z.txt HTTP/1.1\t\\\"1\\\"\t-",
            "120\t220\t204\tMOVE /dav/c/z.txt HTTP/1.1\t\\\"1\\\"\t-",
            "100\t200\t204\tPUT /dav/other/a%20b.txt HTTP/1.1\t\\\"29-1\\\"\t-",
            "garbage",
        ].joined(separator: "\n")
        let races = ApacheWriteRace.find(in: log, collection: "/dav/c/")
        #expect(races.map(\.path) == ["a b.txt", "n.txt"])
        #expect(races.first?.first == 100...200 && races.first?.second == 150...250)
        #expect(races.map(\.condition) == ["If-Match: \"29-1\"", "If-None-Match: *"])
    }
}
