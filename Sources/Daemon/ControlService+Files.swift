// The file commands on the control socket: each path is matched to the running domain
// whose folder holds it (symlinks in the folders above resolved), and refused with a
// sentence when it is in none, in a domain not running, or in one without files on demand.
import Control
import Foundation
import Glibc
import SyncEngine

extension ControlService {
    public func files(_ request: ControlRequest) throws(ControlFailure) -> (reports: [FileReport], job: HydrationJob?) {
        var reports: [FileReport] = []
        var work: [DomainFiles.Work] = []
        for absolute in request.paths ?? [] {
            do throws(ProviderError) {
                let (files, path) = try locate(absolute)
                let done = try carryOut(request, on: path, absolute: absolute, in: files)
                reports += done.reports
                work += done.work
            } catch {
                reports.append(FileReport(path: absolute, error: error.message))
            }
        }
        return (reports, work.isEmpty ? nil : jobs.start(work))
    }

    public func progress(job id: Int) throws(ControlFailure) -> HydrationJob {
        try jobs.job(id)
    }

    private func carryOut(_ request: ControlRequest, on path: RemotePath, absolute: String,
                          in files: DomainFiles) throws(ProviderError) -> (reports: [FileReport], work: [DomainFiles.Work]) {
        switch request.command {
        case .pin:
            let (report, work) = try files.pin(path, absolute: absolute)
            return ([report], work)
        case .unpin: return ([try files.unpin(path, absolute: absolute)], [])
        case .evict: return (try files.evict(path, absolute: absolute), [])
        case .hydrate:
            let (report, work) = try files.hydrate(path, absolute: absolute, range: (request.offset, request.length))
            return ([report], work)
        case .thumbnails:
            let (report, work) = try files.thumbnails(path, absolute: absolute)
            return ([report], work)
        default: return ([try files.status(path, absolute: absolute)], [])
        }
    }

    /// The running domain holding `absolute`, and the path below its folder.
    func locate(_ absolute: String) throws(ProviderError) -> (DomainFiles, RemotePath) {
        let real = Self.resolved(absolute)
        for domain in supervisor.configuration.domains {
            let root = Self.resolved(domain.localPath + "/.")
            guard real == root || real.hasPrefix(root + "/") else { continue }
            guard real != root else {
                throw ProviderError(.cannotSynchronize, "\(absolute) is the folder of domain \"\(domain.name)\" itself; name files or folders in it")
            }
            guard let files = supervisor.domains.first(where: { $0.domain.name == domain.name })?.monitor.files else {
                throw ProviderError(.cannotSynchronize, "domain \"\(domain.name)\" is not running now; `tidesync status` says why")
            }
            return (files, try RemotePath(string: String(real.dropFirst(root.count))))
        }
        let folders = supervisor.configuration.domains.map(\.localPath).joined(separator: ", ")
        throw ProviderError(.cannotSynchronize, "\(absolute) is not in the folder of any domain (the folders: \(folders))")
    }

    /// `path` with its folders' symlinks, `.` and `..` resolved; its last name kept as it
    /// is (a last name "." resolves the whole path, for a domain's folder).
    static func resolved(_ path: String) -> String {
        let whole = path.hasSuffix("/.")
        let parent = whole ? path : (path as NSString).deletingLastPathComponent
        guard let real = realpath(parent, nil) else { return (path as NSString).standardizingPath }
        defer { free(real) }
        let folder = String(cString: real)
        return whole ? folder : (folder == "/" ? "" : folder) + "/" + (path as NSString).lastPathComponent
    }
}
