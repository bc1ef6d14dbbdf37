// Names that begin with "." on a server whose listings leave them out (nginx's dav-ext
// module): the server stores and serves them, but no PROPFIND Depth 1 names them. Read as
// a listing, every such item this machine uploaded would look deleted on the server at
// the next pass, and be deleted here (seen: `.env` and `sub/.hidden` were uploaded to
// nginx, then deleted locally by the second `run --once`). So each recorded one is asked
// for by name, and a folder among them listed, before a listing is compared with the
// records. What another client adds under such a name stays unseen there until this
// machine creates an item of that name: the create meets it, and from then on walks ask
// for it too, so the next plan sees both (README, server compatibility).

import Synchronization

extension SyncProvider {
    /// Adds to `listing` (of `top`, listed at `location`: the same place, or where a folder
    /// to be deleted was set aside) the items at `recorded` paths (below `top`, parents
    /// first) with a name beginning with "." that it leaves out, each asked for by name at
    /// `location` (a folder or bundle with what is below it) and added as if at `top`. One
    /// not found is left out (deleted on the server); one refused (403, locked) is unlisted,
    /// so unknown rather than deleted; one inside a folder that is not there is not asked for.
    func addHiddenEntries(to listing: inout RemoteListing, recorded: [RemotePath], top: RemotePath = .root,
                          location: RemotePath = .root) async throws(ProviderError) {
        guard recorded.contains(where: { $0.name.hasPrefix(".") }) else { return }
        func moved(_ path: RemotePath, from: RemotePath, to: RemotePath) -> RemotePath {
            path.replacingPrefix(from, with: to) ?? path
        }
        var present = Set(listing.entries.map(\.path))
        for path in recorded {
            guard path.name.hasPrefix("."), !present.contains(path), path.parent == top || present.contains(path.parent),
                  !path.components.contains(where: { $0.hasPrefix(BundleManifest.scratchPrefix) }),
                  !listing.unlisted.keys.contains(where: { path == $0 || path.isDescendant(of: $0) }) else { continue }
            let there = moved(path, from: top, to: location)
            var found: [RemoteEntry]
            do {
                let entry = try await store.entry(at: there)
                found = [entry]
                if entry.kind == .folder || entry.kind == .bundle {
                    let below = try await store.listing(below: there)
                    found += below.entries
                    for (folder, error) in below.unlisted { listing.unlisted[moved(folder, from: location, to: top)] = error }
                }
            } catch where error.code == .noSuchItem {
                continue
            } catch where error.code == .permissionDenied || error.code == .locked {
                // Refused for this item alone: unknown, as a folder a walk could not list.
                listing.unlisted[path] = error
                continue
            }
            for index in found.indices { found[index].path = moved(found[index].path, from: location, to: top) }
            listing.entries += found
            present.formUnion(found.map(\.path))
        }
    }

    /// A create at `path` met an item there that the listings may not show.
    func noteCollision(at path: RemotePath) {
        guard path.name.hasPrefix(".") else { return }
        collidedHiddenNames.withLock { _ = $0.insert(path) }
    }

    /// Adds the items a create met (`noteCollision`) that `walk` leaves out, each asked for
    /// by name; one the server no longer has is forgotten.
    func addCollidedEntries(to walk: inout RemoteListing) async throws(ProviderError) {
        let paths = collidedHiddenNames.withLock { $0 }.sorted()
        guard !paths.isEmpty else { return }
        let listed = Set(walk.entries.map(\.path))
        try await addHiddenEntries(to: &walk, recorded: paths.filter { !listed.contains($0) })
        let present = Set(walk.entries.map(\.path))
        collidedHiddenNames.withLock { $0.subtract(paths.filter { !present.contains($0) }) }
    }
}
