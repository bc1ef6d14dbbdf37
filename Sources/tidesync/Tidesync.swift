import ArgumentParser

/// The `tidesync` command line: the daemon and the commands that talk to it.
@main
struct Tidesync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tidesync",
        abstract: "Keep a folder in two-way sync with a WebDAV server or a local directory.",
        discussion: """
            tidesync run [--once]              the daemon in the foreground (systemd)
            tidesync status [--json]           what the daemon is doing
            tidesync file-status PATH... [--json]
                dataless / partial N % / materialized, pinned, pending, conflict
            tidesync hydrate PATH... [--range OFFSET:LENGTH]
                download placeholders' bytes now (a progress bar on a terminal)
            tidesync pin PATH...               always keep downloaded (inherited)
            tidesync unpin PATH...             may be evicted again
            tidesync evict PATH...             free the space, keep placeholders
            tidesync thumbnails PATH...        thumbnails of image placeholders, not downloading them
            tidesync conflicts [--json]        the conflict copies recorded
            tidesync pause | resume | sync-now | allow-deletions | check-config
            """,
        version: TidesyncVersion.text,
        subcommands: [Run.self, Status.self, Conflicts.self, Pause.self, Resume.self, SyncNow.self, AllowDeletions.self,
                      FileStatus.self, Pin.self, Unpin.self, Evict.self, Hydrate.self, ThumbnailsCommand.self, CheckConfig.self]
    )
}
