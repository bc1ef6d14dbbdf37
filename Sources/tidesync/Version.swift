/// What `tidesync --version` prints: the release and the git commit the binary was built
/// from (`buildCommit`, written before each build by packaging/plugins/BuildCommit).
enum TidesyncVersion {
    static let number = "0.1.0"
    static var text: String { "tidesync \(number) (\(buildCommit.map { "commit \($0)" } ?? "unknown commit"))" }
}
