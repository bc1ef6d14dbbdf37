import ArgumentParser
import Control
import Foundation
import Glibc
import TidesyncConfig

/// A command on files of a domain with files on demand, carried out by the running daemon.
protocol FileCommand: ParsableCommand {
    var options: DaemonOptions { get }
    var paths: [String] { get }
    static var command: ControlRequest.Command { get }
}

extension FileCommand {
    var name: String { "tidesync " + Self.command.rawValue }

    /// The socket, or exit 4 with the configuration's errors.
    func socket() throws -> String {
        let loaded = options.loadConfiguration()
        guard let socket = options.socketPath(try? loaded.get()) else {
            if case .failure(let errors) = loaded { printError(errors.description) }
            throw ExitCode(DaemonExit.cannotAsk)
        }
        return socket
    }

    /// The daemon's answer to `request`; exits 3 when it is not running, 4 when it refused.
    func ask(_ request: ControlRequest, at socket: String) throws -> ControlResponse {
        switch ControlClient.send(request, to: socket) {
        case .success(let answer):
            guard answer.ok else {
                printError("\(name): " + (answer.error?.message ?? "the daemon refused"))
                throw ExitCode(DaemonExit.cannotAsk)
            }
            return answer
        case .failure(let failure):
            printError("\(name): " + failure.message)
            throw ExitCode(failure == .notRunning ? DaemonExit.notRunning : DaemonExit.cannotAsk)
        }
    }

    /// The paths as absolute paths (from the working directory), `.` and `..` resolved.
    var absolutePaths: [String] {
        let here = FileManager.default.currentDirectoryPath
        return paths.map { path in
            ((path.hasPrefix("/") ? path : here + "/" + path) as NSString).standardizingPath
        }
    }

    /// Prints what was done on stdout and each refusal on stderr; returns the refusals.
    func show(_ reports: [FileReport]) -> Int {
        var refused = 0
        for report in reports {
            if let error = report.error {
                printError("\(name): \(error)")
                refused += 1
            } else if let done = report.done {
                print("\(report.path): \(done)")
            }
        }
        return refused
    }

    /// Sends the command for every path, shows the answers, follows the hydration it
    /// started; exits 4 when a path was refused or a file could not be hydrated.
    func carryOut(offset: Int64? = nil, length: Int64? = nil, unit: ProgressView.Unit = .bytes) throws {
        let socket = try socket()
        let answer = try ask(ControlRequest(Self.command, paths: absolutePaths, offset: offset, length: length), at: socket)
        var failed = show(answer.files ?? [])
        if let job = answer.job {
            failed += try follow(job, at: socket, unit: unit)
        }
        if failed > 0 { throw ExitCode(DaemonExit.cannotAsk) }
    }

    /// Polls the job until it is finished, drawing a progress bar on a terminal and plain
    /// lines otherwise; returns how many of its files failed.
    func follow(_ started: HydrationJob, at socket: String, unit: ProgressView.Unit = .bytes) throws -> Int {
        var view = ProgressView(terminal: isatty(STDOUT_FILENO) == 1, started: started, unit: unit)
        var job = started
        while !job.finished {
            Thread.sleep(forTimeInterval: 0.2)
            job = try ask(ControlRequest(.progress, paths: [], job: job.id), at: socket).job ?? job
            view.show(job)
        }
        view.finish(job)
        for file in job.files { if let error = file.error { printError("\(name): \(file.path): \(error)") } }
        return job.files.filter { $0.error != nil }.count
    }
}

extension ControlRequest {
    /// A `progress` request for `job`.
    init(_ command: Command, paths: [String], job: Int) {
        self.init(command)
        self.job = job
    }
}

private let fileDiscussion = """
    The daemon must be running, and the domain must have files on demand on ([domain.placeholders] \
    mode = "auto" or "all", with fanotify pre-content events available: root, Linux 6.14+, ext4, \
    xfs or btrfs). Exit status: 0 done, 3 the daemon is not running, 4 refused for some path \
    (the reason is printed) or a download failed.
    """

/// `tidesync pin PATH…`.
struct Pin: FileCommand {
    static let configuration = CommandConfiguration(
        abstract: "Always keep files downloaded (a folder: everything in it, and what comes later).",
        discussion: "Placeholders are downloaded whole now, with a progress bar; a new version from the server is "
            + "downloaded whole too, and `evict` refuses pinned files. " + fileDiscussion)
    static let command = ControlRequest.Command.pin
    @OptionGroup var options: DaemonOptions
    @Argument(help: "Files or folders in a domain.") var paths: [String]
    func run() throws { try carryOut() }
}

/// `tidesync unpin PATH…`.
struct Unpin: FileCommand {
    static let configuration = CommandConfiguration(
        abstract: "Undo `pin`: the files may be evicted again (nothing is evicted now).", discussion: fileDiscussion)
    static let command = ControlRequest.Command.unpin
    @OptionGroup var options: DaemonOptions
    @Argument(help: "Files or folders in a domain.") var paths: [String]
    func run() throws { try carryOut() }
}

/// `tidesync evict PATH…`.
struct Evict: FileCommand {
    static let configuration = CommandConfiguration(
        abstract: "Free the space of downloaded files: they stay as placeholders, downloaded again when read.",
        discussion: "Size and modification time stay. Refused, with the reason, for pinned files, files with changes "
            + "not synced yet, and files a program holds open. A folder: every file in it. " + fileDiscussion)
    static let command = ControlRequest.Command.evict
    @OptionGroup var options: DaemonOptions
    @Argument(help: "Files or folders in a domain.") var paths: [String]
    func run() throws { try carryOut() }
}
