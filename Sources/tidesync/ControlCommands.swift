import ArgumentParser
import Control
import Foundation

/// A command that asks the running daemon to do something to its domains.
protocol DomainControlCommand: ParsableCommand {
    var options: DaemonOptions { get }
    var domain: String? { get }
    static var command: ControlRequest.Command { get }
    static var done: String { get }
    /// What is printed when no domain was acted on.
    static var nothing: String { get }
}

extension DomainControlCommand {
    static var nothing: String { "No running domain." }

    func run() throws {
        let configuration = try? options.loadConfiguration().get()
        guard let socket = options.socketPath(configuration) else {
            if case .failure(let errors) = options.loadConfiguration() { printError(errors.description) }
            throw ExitCode(DaemonExit.cannotAsk)
        }
        switch ControlClient.send(ControlRequest(Self.command, domain: domain), to: socket) {
        case .success(let answer):
            guard answer.ok, let names = answer.domains else {
                printError("tidesync \(Self.command.rawValue): " + (answer.error?.message ?? "the daemon refused"))
                throw ExitCode(DaemonExit.cannotAsk)
            }
            print(names.isEmpty ? Self.nothing : "\(Self.done): \(names.joined(separator: ", "))")
        case .failure(let failure):
            printError("tidesync \(Self.command.rawValue): " + failure.message)
            throw ExitCode(failure == .notRunning ? DaemonExit.notRunning : DaemonExit.cannotAsk)
        }
    }
}

private let controlDiscussion = "Exit status: 0 done, 3 the daemon is not running, 4 the daemon refused (e.g. no such domain)."

/// `tidesync pause [DOMAIN]`.
struct Pause: DomainControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pause syncing (one domain or all): running transfers finish, no new one starts.",
        discussion: "The pause lasts until `tidesync resume` or until the daemon restarts. " + controlDiscussion)
    static let command = ControlRequest.Command.pause
    static let done = "Paused"
    @OptionGroup var options: DaemonOptions
    @Argument(help: "The domain (default: every domain).") var domain: String?
}

/// `tidesync resume [DOMAIN]`.
struct Resume: DomainControlCommand {
    static let configuration = CommandConfiguration(abstract: "Resume syncing after `tidesync pause`.",
                                                    discussion: controlDiscussion)
    static let command = ControlRequest.Command.resume
    static let done = "Resumed"
    @OptionGroup var options: DaemonOptions
    @Argument(help: "The domain (default: every domain).") var domain: String?
}

/// `tidesync sync-now [DOMAIN]`.
struct SyncNow: DomainControlCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync-now",
        abstract: "Start a sync pass now instead of at the next poll; a domain waiting on an error retries now.",
        discussion: controlDiscussion)
    static let command = ControlRequest.Command.syncNow
    static let done = "Sync started"
    @OptionGroup var options: DaemonOptions
    @Argument(help: "The domain (default: every domain).") var domain: String?
}

/// `tidesync allow-deletions [DOMAIN]`.
struct AllowDeletions: DomainControlCommand {
    static let configuration = CommandConfiguration(
        commandName: "allow-deletions",
        abstract: "Carry out, once, the deletions a domain holds back (an emptied side, or more than max_delete).",
        discussion: "`tidesync status` shows what is held: how many items, on which side. This releases that hold once and starts a pass; a later pass that would delete more, or on the other side, is held again. Without a running daemon use `tidesync run --once --allow-mass-delete`. " + controlDiscussion)
    static let command = ControlRequest.Command.allowDeletions
    static let done = "Held deletions released"
    static let nothing = "Nothing is held back; nothing to release."
    @OptionGroup var options: DaemonOptions
    @Argument(help: "The domain (default: every domain).") var domain: String?
}
