import Foundation
import Testing

/// STYLE.md §9: the engine owns the state DB, the remote store and the journal; the replica
/// calls it through `OperationJournal`, `PassRecords` and the engine's write verbs, and
/// never names the engine's ports.
@Suite("The replica never reaches into the engine's ports")
struct JournalOwnerTests {
    /// `Sources/Replica`, found from this file's place in the package.
    static let replicaSources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/Replica")

    static let forbidden = [#"provider\.state\b"#, #"provider\.store\b"#, #"\bStateDatabase\b"#, #"\bRemoteStore\b"#,
                            #"\bStateStore\b"#]

    @Test("no file in Sources/Replica uses provider.state, provider.store, StateDatabase, RemoteStore or StateStore")
    func noPortInReplica() throws {
        let files = FileManager.default.enumerator(atPath: Self.replicaSources.path)?
            .compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
        #expect(files.count > 10, "the sources were not found at \(Self.replicaSources.path)")
        let patterns = try Self.forbidden.map { try NSRegularExpression(pattern: $0) }
        var found: [String] = []
        for file in files {
            let text = try String(contentsOfFile: Self.replicaSources.appendingPathComponent(file).path, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let line = String(line)
                let range = NSRange(line.startIndex..., in: line)
                if patterns.contains(where: { $0.firstMatch(in: line, range: range) != nil }) {
                    found.append("\(file):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(found.isEmpty, "the replica reaches into the engine's ports:\n\(found.joined(separator: "\n"))")
    }
}
