import Logging
import SyncEngine

extension SyncPass {
    /// Renames on the server the new items whose names differ from a sibling's only in
    /// Unicode normalisation (`NormalisationClash`), each MOVE guarded by the version the
    /// walk saw and never overwriting; returns the remote listing as it is afterwards. A
    /// rename that fails is logged and the item keeps its name (Linux holds both, so nothing
    /// is overwritten either way).
    func separateNormalisationClashes(_ remote: [RemotePath: RemoteEntry], local: [RemotePath: LocalObservation],
                                      recorded: [RemotePath: ItemRecord]) async -> [RemotePath: RemoteEntry] {
        let renames = NormalisationClash.renames(remote: remote, local: local.keys, recorded: recorded.keys)
        guard !renames.isEmpty else { return remote }
        var result = remote
        for rename in renames {
            guard let entry = result[rename.from] else { continue }
            do {
                let moved = try await runner.provider.store.move(rename.from, to: rename.to,
                                                                  version: entry.kind == .file ? entry.etag : nil)
                logger.warning("\(rename.from) differs from another name in its folder only in Unicode normalisation; renamed to \(rename.to) on the server so both are kept")
                var rebased: [RemotePath: RemoteEntry] = [:]
                for (path, var item) in result {
                    guard let newPath = path.replacingPrefix(rename.from, with: rename.to) else {
                        rebased[path] = item
                        continue
                    }
                    item.path = newPath
                    rebased[newPath] = item
                }
                rebased[rename.to] = moved
                result = rebased
            } catch {
                logger.warning("cannot rename \(rename.from) (its name differs from another only in Unicode normalisation): \(error.message); it keeps its name")
            }
        }
        return result
    }
}
