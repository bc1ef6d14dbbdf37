import Foundation
import SyncEngine

/// The steps that write to the remote: through the File Provider surface (`createItem`,
/// `modifyItem`, `deleteItem`) for items the engine knows by id, through its path-explicit
/// twins otherwise (a parent not recorded yet, a replay after a crash).
extension PlanRunner {
    func createRemoteFolder(_ path: RemotePath, item: ItemIdentifier?, operation: Int64?) async throws(ProviderError) {
        let local = try present(path, kind: .folder)
        if item == nil, let parent = try provider.itemID(at: path.parent) {
            _ = try await provider.createItem(basedOn: ItemTemplate(parentID: parent, name: path.name, kind: .folder, local: local.stat),
                                              contents: nil, options: WriteOptions(journalEntry: operation), progress: nil)
        } else {
            try await provider.makeRemoteFolder(at: path, item: item, local: local.stat, operation: operation)
        }
    }

    func upload(_ path: RemotePath, condition: WriteCondition, source: LocalStat, item: ItemIdentifier?, operation: Int64?,
                progress: TransferProgress?) async throws(ProviderError) {
        _ = try present(path, kind: .file, stat: source)
        try await materializeForReading(path)
        try await waitPastTimestamp(of: path, source)
        let contents = URL(fileURLWithPath: folder.absolute(path))
        let options = WriteOptions(journalEntry: operation)
        switch (condition, item) {
        case (.mustMatch(let base), let item?) where try provider.path(of: item) == path:
            // An edit of an item the engine knows: modifyItem, guarded by its base version.
            let template = ItemTemplate(id: item, parentID: try provider.itemID(at: path.parent) ?? .root, name: path.name,
                                        kind: .file, local: source)
            _ = try await provider.modifyItem(template, baseVersion: ItemVersion(content: base), changedFields: .contents,
                                              contents: contents, options: options, progress: progress)
        case (.mustNotExist, nil):
            if let parent = try provider.itemID(at: path.parent) {
                _ = try await provider.createItem(basedOn: ItemTemplate(parentID: parent, name: path.name, kind: .file, local: source),
                                                  contents: contents, options: options, progress: progress)
            } else {
                try await provider.upload(contents, to: path, condition: condition, source: source, item: item, operation: operation,
                                          progress: progress)
            }
        default:
            try await provider.upload(contents, to: path, condition: condition, source: source, item: item, operation: operation,
                                      progress: progress)
        }
    }

    func createRemoteSymlink(_ path: RemotePath, target: String, condition: WriteCondition, item: ItemIdentifier?,
                             operation: Int64?) async throws(ProviderError) {
        let local = try present(path, kind: .symlink)
        guard local.symlinkTarget == target else { throw changedSincePlan(path) }
        if case .mustNotExist = condition, item == nil, let parent = try provider.itemID(at: path.parent) {
            let template = ItemTemplate(parentID: parent, name: path.name, kind: .symlink, symlinkTarget: target, local: local.stat)
            _ = try await provider.createItem(basedOn: template, contents: nil, options: WriteOptions(journalEntry: operation),
                                              progress: nil)
        } else {
            try await provider.makeRemoteSymlink(at: path, target: target, condition: condition, source: local.stat,
                                                 item: item, operation: operation)
        }
    }

    func moveRemote(from: RemotePath, to: RemotePath, version: ETag?, item: ItemIdentifier,
                    operation: Int64?) async throws(ProviderError) {
        guard try provider.path(of: item) == from, let record = try provider.itemRecord(item),
              let parent = try provider.itemID(at: to.parent) else {
            try await provider.moveRemote(from: from, to: to, version: version, item: item, operation: operation)
            return
        }
        // A rename or move of an item the engine knows: modifyItem of its name and parent,
        // one remote MOVE.
        var changed: ItemFields = []
        if to.name != from.name { changed.insert(.filename) }
        if to.parent != from.parent { changed.insert(.parentItemIdentifier) }
        let template = ItemTemplate(id: item, parentID: parent, name: to.name, kind: record.kind,
                                    symlinkTarget: record.symlinkTarget, local: record.local)
        _ = try await provider.modifyItem(template, baseVersion: ItemVersion(content: version ?? record.remoteETag),
                                          changedFields: changed, contents: nil,
                                          options: WriteOptions(journalEntry: operation), progress: nil)
    }

    func deleteRemote(_ path: RemotePath, version: ETag?, item: ItemIdentifier, scratch: String?,
                      operation: Int64?) async throws(ProviderError) {
        if try provider.path(of: item) == path {
            try await provider.deleteItem(item, baseVersion: ItemVersion(content: version),
                                          options: WriteOptions(journalEntry: operation, scratchToken: scratch))
        } else {
            try await provider.deleteRemote(path, version: version, item: item, scratchToken: scratch, operation: operation)
        }
    }
}
