import ArgumentParser
import Control
import Foundation
import TidesyncConfig

/// `tidesync hydrate PATH… [--range OFFSET:LENGTH]`.
struct Hydrate: FileCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download the missing bytes of placeholders now (a folder: every placeholder in it).",
        discussion: "With --range, only those bytes of each file (widened to the domain's alignment). "
            + "Shows a progress bar (bytes, rate, time left) on a terminal, and a line per file otherwise. " + """
            The daemon must be running, and the domain must have files on demand on. Exit status: 0 done, \
            3 the daemon is not running, 4 refused for some path (the reason is printed) or a download failed.
            """)
    static let command = ControlRequest.Command.hydrate
    @OptionGroup var options: DaemonOptions
    @Option(name: .long, help: ArgumentHelp("Only this byte range, e.g. 0:4096 or 1GiB:4MiB.", valueName: "offset:length"))
    var range: String?
    @Argument(help: "Files or folders in a domain.") var paths: [String]

    func validate() throws {
        if let range { _ = try Self.parse(range) }
    }

    func run() throws {
        let parsed = try range.map(Self.parse)
        try carryOut(offset: parsed?.offset, length: parsed?.length)
    }

    /// `OFFSET:LENGTH`, each bytes or a size such as `4MiB`; the length not zero.
    static func parse(_ text: String) throws -> (offset: Int64, length: Int64) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let offset = ByteCount(parsing: String(parts[0])), let length = ByteCount(parsing: String(parts[1])) else {
            throw ValidationError("--range takes OFFSET:LENGTH, two sizes in bytes (or with KiB, MiB, GiB, …) such as 0:4096 "
                                  + "or 1GiB:4MiB; \"\(text.prefix(64))\" is not one")
        }
        guard length.bytes > 0 else { throw ValidationError("--range \(text): the length must be more than 0 bytes") }
        guard offset.bytes <= Int64.max - length.bytes else { throw ValidationError("--range \(text): the range ends past 2^63 bytes") }
        return (offset.bytes, length.bytes)
    }
}

/// `tidesync file-status PATH… [--json]`.
struct FileStatus: FileCommand {
    static let configuration = CommandConfiguration(
        commandName: "file-status",
        abstract: "Show what files hold: dataless, partial N %, or materialized; pinned, pending, conflict.",
        discussion: """
            One line per path: "PATH: partial 37 % (1.2 MiB of 3.1 MiB), pinned, pending". pending: changed \
            here and not synced yet; conflict: a conflict copy, or a file that has one. --json prints \
            {"files": [...]} with the fields path, domain, kind, state, size, present, pinned, pending, \
            conflict, error. The daemon must be running, and the domain must have files on demand on. \
            Exit status: 0 every path reported, 3 the daemon is not running, 4 refused for some path.
            """)
    static let command = ControlRequest.Command.fileStatus
    @OptionGroup var options: DaemonOptions
    @Flag(name: .long, help: "Print JSON.") var json = false
    @Argument(help: "Files or folders in a domain.") var paths: [String]

    struct Document: Encodable {
        var files: [FileReport]
    }

    func run() throws {
        let reports = try ask(ControlRequest(Self.command, paths: absolutePaths), at: socket()).files ?? []
        if json {
            print(String(decoding: (try? ControlJSON.encoder(pretty: true).encode(Document(files: reports))) ?? Data(), as: UTF8.self))
        } else {
            for report in reports where report.error == nil { print(Self.describe(report)) }
        }
        if reports.contains(where: { $0.error != nil }) {
            for report in reports { if let error = report.error { printError("\(name): \(error)") } }
            throw ExitCode(DaemonExit.cannotAsk)
        }
    }

    static func describe(_ report: FileReport) -> String {
        var words: [String] = []
        if let state = report.state {
            let sizes = "(\(StatusScreen.bytes(report.present ?? 0)) of \(StatusScreen.bytes(report.size ?? 0)))"
            words.append(state == "partial" ? "partial \(report.percent ?? 0) % \(sizes)" : "\(state) \(sizes)")
        }
        if report.kind != "file", let kind = report.kind { words.append(kind) }
        if report.pinned == true { words.append("pinned") }
        if report.pending == true { words.append("pending") }
        if report.conflict == true { words.append("conflict") }
        return "\(report.path): " + words.joined(separator: ", ")
    }
}
