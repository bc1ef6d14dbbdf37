import ArgumentParser

/// The `tidesync` command line: the daemon and the commands that talk to it.
@main
struct Tidesync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tidesync",
        abstract: "Keep a folder in two-way sync with a WebDAV server or a local directory.",
        version: TidesyncVersion.text,
        subcommands: [Run.self, Status.self, Conflicts.self, Pause.self, Resume.self, SyncNow.self, AllowDeletions.self, CheckConfig.self]
    )
}
