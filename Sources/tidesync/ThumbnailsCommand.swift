import ArgumentParser
import Control

/// `tidesync thumbnails PATH…`.
struct ThumbnailsCommand: FileCommand {
    static let configuration = CommandConfiguration(
        commandName: "thumbnails",
        abstract: "Make thumbnails of image placeholders without downloading them (a folder: every one in it).",
        discussion: """
            Writes the freedesktop thumbnail cache ($XDG_CACHE_HOME/thumbnails, normal and large) that \
            GNOME, KDE and other file managers read, from the preview a JPEG or raw file carries (a small \
            ranged download of its first bytes) or from the whole image when it is at most \
            thumbnail_max_fetch. The daemon makes them by itself after each sync; this makes them now, \
            again even when the cache has them. Downloaded files are left to the desktop's own \
            thumbnailer. Shows a progress bar on a terminal, and a line per image otherwise. The daemon \
            must be running, with files on demand on. Exit status: 0 done, 3 the daemon is not running, \
            4 refused for some path (the reason is printed) or no thumbnail could be made for an image.
            """)
    static let command = ControlRequest.Command.thumbnails
    @OptionGroup var options: DaemonOptions
    @Argument(help: "Image files or folders in a domain.") var paths: [String]

    func run() throws { try carryOut(unit: .thumbnails) }
}
