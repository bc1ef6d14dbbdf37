import SyncEngine

extension SyncAction {
    /// A short name for logs and the journal.
    var stepName: String {
        switch self {
        case .createRemoteFolder: "create-remote-folder"
        case .upload: "upload"
        case .createRemoteSymlink: "create-remote-symlink"
        case .moveRemote: "move-remote"
        case .deleteRemote: "delete-remote"
        case .createLocalFolder: "create-local-folder"
        case .download: "download"
        case .createLocalSymlink: "create-local-symlink"
        case .moveLocal: "move-local"
        case .deleteLocal: "delete-local"
        case .conflictCopy: "conflict-copy"
        case .compareContents: "compare-contents"
        case .record: "record"
        case .forget: "forget"
        case .remoteNameWins: "remote-name-wins"
        }
    }

    /// True for steps that touch either side (and so are journaled).
    var doesIO: Bool {
        switch self {
        case .record, .forget, .remoteNameWins: false
        default: true
        }
    }

    /// The remote version a step that writes a bundle replaces: an upload's base, a delete's
    /// version; nil for creates.
    var replacedVersion: ETag? {
        switch self {
        case .upload(_, .mustMatch(let base), _, _): base
        case .deleteRemote(_, let version, _): version
        default: nil
        }
    }

    /// True for steps that may build or set aside a bundle or a folder on the server (and
    /// so need a scratch token in their journal entry): `recorded` tells a folder's delete.
    func setsAsideRemotely(_ rule: BundleRule, recorded: [RemotePath: ItemRecord]) -> Bool {
        switch self {
        case .deleteRemote(let path, _, _):
            rule.isBundle(name: path.name) || recorded[path]?.kind == .folder
        case .upload(let path, _, _, _), .compareContents(let path, _, _, _, _):
            rule.isBundle(name: path.name)
        case .conflictCopy(let conflict):
            conflict.kind == .bundle
        default:
            false
        }
    }

    /// True for steps that write a temporary file in the sync folder.
    var needsTemporary: Bool {
        switch self {
        case .download, .compareContents, .createLocalSymlink: true
        default: false
        }
    }

    var itemID: ItemIdentifier? {
        switch self {
        case .createRemoteFolder(_, let item), .upload(_, _, _, let item), .createRemoteSymlink(_, _, _, let item),
             .createLocalFolder(_, let item), .download(_, _, _, let item), .createLocalSymlink(_, _, _, let item),
             .compareContents(_, _, _, let item, _), .record(let item, _, _, _, _):
            item
        case .moveRemote(_, _, _, let item), .deleteRemote(_, _, let item), .moveLocal(_, _, _, let item),
             .deleteLocal(_, _, let item), .forget(let item), .remoteNameWins(let item, _, _):
            item
        case .conflictCopy(let conflict):
            conflict.item
        }
    }
}
