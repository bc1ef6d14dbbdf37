import Foundation
import PackagePlugin

/// Writes `BuildCommit.swift` (`let buildCommit: String?`) before every build of the target
/// that uses it, with build-commit.sh beside this file: the git commit the sources are at,
/// or nil without git (`tidesync --version` then says "unknown commit").
@main
struct BuildCommit: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "Generated")
        let script = context.package.directoryURL.appending(path: "packaging/plugins/BuildCommit/build-commit.sh")
        return [.prebuildCommand(displayName: "Recording the git commit of tidesync's sources",
                                 executable: URL(fileURLWithPath: "/bin/sh"),
                                 arguments: [script.path, context.package.directoryURL.path, output.path],
                                 outputFilesDirectory: output)]
    }
}
