// Bundle contract (DESIGN.md, "Bundles"): a bundle reaches the server whole or not at all.
// A new version is built under a scratch name beside the target (`.tidesync-bundle-TOKEN`,
// which no listing reports as an item): a copy of the old version made on the server where
// the store can copy, then only the members whose bytes changed uploaded into it. It then
// takes the target's place: the old version is moved aside, checked against the version the
// change was based on (moved back if another client changed it meanwhile), the new one is
// moved in, and the old one deleted. A reader of the server sees the old bundle, then (for
// the time between two renames) none, then the new one — never a mix. The journal entry of
// the step names the token, so after a crash `cleanUpScratch` puts an old version that was
// aside back in place and removes a half-built new one. An old version is deleted only
// after one more rename, to `-gone`: what is under that name is only ever deleted.

import Foundation
import Synchronization

/// The remote temporaries of one bundle write, in the target's folder.
public struct BundleScratch: Sendable, Hashable {
    /// Where the new version is built.
    public let building: RemotePath
    /// Where the old version waits while the new one takes its place.
    public let aside: RemotePath
    /// Where the old version goes, once checked, to be deleted (`removeAside`).
    public let doomed: RemotePath

    public init(beside target: RemotePath, token: String) throws(ProviderError) {
        building = try target.parent.appending("\(BundleManifest.scratchPrefix)bundle-\(token)")
        aside = try target.parent.appending("\(BundleManifest.scratchPrefix)bundle-\(token)\(BundleManifest.asideSuffix)")
        doomed = try target.parent.appending("\(BundleManifest.scratchPrefix)bundle-\(token)\(BundleManifest.doomedSuffix)")
    }

    /// The doomed name that belongs to the name `aside` of a version set aside.
    static func doomedName(of aside: String) -> String {
        String(aside.dropLast(BundleManifest.asideSuffix.count)) + BundleManifest.doomedSuffix
    }
}

extension SyncProvider {
    /// The bundle at `path` as the store lists it now: its entry (kind `bundle`, version
    /// derived from its members) and its members. `versionMismatch` when something other
    /// than a folder is there.
    public func bundleListing(at path: RemotePath) async throws(ProviderError) -> (entry: RemoteEntry, members: [RemoteEntry]) {
        let root = try await store.entry(at: path)
        guard root.kind == .folder || root.kind == .bundle else {
            throw ProviderError(.versionMismatch, "\(path) is no longer a bundle on the server")
        }
        let members = BundleManifest.members(of: path, in: try await store.descendants(of: path))
        return (BundleManifest.bundleEntry(root, members: members), members)
    }

    /// Uploads the bundle `contents` to `path`, guarded by `condition`, as one item: built
    /// under a scratch name and moved into place (see the contract above). A modification
    /// sends only the members whose bytes differ from the recorded manifest when the store
    /// copies server-side. Records the bundle with `source` as its local stat and its new
    /// manifest.
    @discardableResult
    public func uploadBundle(_ contents: BundleContents, to path: RemotePath, condition: WriteCondition, source: LocalStat,
                             item: ItemIdentifier?, scratchToken: String, operation: Int64?,
                             progress: TransferProgress? = nil) async throws(ProviderError) -> ItemRecord {
        let scratch = try BundleScratch(beside: path, token: scratchToken)
        try await removeIfPresent(scratch.building)
        var reused: [RemotePath: RemoteEntry] = [:]
        var previous: [RemotePath: BundleMember] = [:]
        var base: ETag?
        if case .mustMatch(let version) = condition {
            base = version
            let now: (entry: RemoteEntry, members: [RemoteEntry])
            do { now = try await bundleListing(at: path) } catch where error.code == .noSuchItem {
                throw ProviderError(.versionMismatch, "\(path) was deleted on the server since version \(version)")
            }
            guard now.entry.etag?.sameValue(as: version) == true else {
                throw ProviderError(.versionMismatch, "\(path) changed on the server since version \(version)")
            }
            if let item {
                for member in try state.bundleMembers(of: item) { previous[try member.relative] = member }
            }
        } else {
            if try await exists(path) {
                noteCollision(at: path)
                throw ProviderError(.filenameCollision, "\(path) already exists on the server")
            }
        }
        do {
            // A failure from here on leaves the server as it was: the scratch collection
            // goes, an old version set aside comes back (`cleanUpScratch`).
            var copied = false
            if base != nil, try await store.copy(path, to: scratch.building) {
                copied = true
                reused = BundleManifest.relative(try await store.descendants(of: scratch.building), below: scratch.building)
            }
            if !copied { _ = try await store.makeFolder(at: scratch.building) }
            try await fill(scratch.building, with: contents, reusing: reused, previous: previous, progress: progress)
            let built = try await bundleListing(at: scratch.building)
            let uploaded = BundleManifest.relative(built.members, below: scratch.building)
            try requireWhole(uploaded, of: contents, at: path)
            try contents.unchanged()
            try await swapIn(scratch, at: path, base: base)
            var members = contents.members
            for index in members.indices {
                members[index].remoteETag = try uploaded[members[index].relative]?.etag
            }
            var entry = built.entry
            entry.path = path
            if let placed = try? await store.entry(at: path) { entry.fileID = placed.fileID; entry.modificationDate = placed.modificationDate }
            return try record(at: path, item: item, kind: .bundle, remote: entry, local: source, bundleMembers: members,
                              operation: operation)
        } catch {
            // Best effort: when the server cannot be reached now, the journal entry keeps
            // the token and the next pass does it (`cleanUpScratch`).
            guard let kept = try? await cleanUpScratch(beside: path, token: scratchToken, base: base, host: nil),
                  !kept.isEmpty else { throw error }
            let names = kept.map(\.description).joined(separator: ", ")
            throw ProviderError(error.code, error.message + "; the version another client wrote meanwhile is kept as \(names)",
                                underlying: error.underlying)
        }
    }

    /// Throws unless the version built (`built`, by path inside the bundle) holds every
    /// member of `contents`, each of its kind and (files) size: a member that did not arrive
    /// where it was sent (a server that lets another client move the folder in the middle
    /// of a PUT into it) must never be published as part of the bundle. Members named
    /// with a leading "." are not looked for (nginx lists no such name), nor a symlink's
    /// kind (a server without dead properties lists it as a file).
    func requireWhole(_ built: [RemotePath: RemoteEntry], of contents: BundleContents, at path: RemotePath) throws(ProviderError) {
        for member in contents.members {
            let relative = try member.relative
            guard !relative.components.contains(where: { $0.hasPrefix(".") }) else { continue }
            let entry = built[relative]
            guard let entry, member.kind == .symlink || Placement.compatible(member.kind, remoteKind: entry.kind),
                  member.kind != .file || entry.size == member.size else {
                throw ProviderError(.serverUnreachable, "the new version of \(path) arrived incomplete on the server (\(member.relativePath) \(entry == nil ? "is missing" : "differs")); will retry")
            }
        }
    }

    /// Makes the tree below `root` hold exactly `contents`: removes what is not in it,
    /// keeps files whose bytes the manifest says are unchanged (`reused`: what a server-side
    /// copy put there; `previous`: the recorded manifest), and uploads the rest.
    func fill(_ root: RemotePath, with contents: BundleContents, reusing reused: [RemotePath: RemoteEntry],
              previous: [RemotePath: BundleMember], progress: TransferProgress?) async throws(ProviderError) {
        var wanted: [RemotePath: BundleMember] = [:]
        for member in contents.members { wanted[try member.relative] = member }
        // What the copy holds that the new version does not (or holds as another kind) goes first.
        var removed: [RemotePath] = []
        for (relative, entry) in reused.sorted(by: { $0.key.components.count < $1.key.components.count })
        where wanted[relative]?.kind != entry.kind || (entry.kind == .symlink && wanted[relative]?.symlinkTarget != entry.symlinkTarget) {
            guard !removed.contains(where: { relative.isDescendant(of: $0) }) else { continue }
            try await store.delete(try RemotePath(root.components + relative.components), version: nil)
            removed.append(relative)
        }
        func keeps(_ relative: RemotePath) -> Bool {
            reused[relative] != nil && !removed.contains { relative.isDescendant(of: $0) }
        }
        let ordered = contents.members.sorted { $0.relativePath.utf8.count < $1.relativePath.utf8.count }
        for member in ordered where member.kind == .folder {
            let relative = try member.relative
            if !keeps(relative) { _ = try await store.makeFolder(at: try member.path(in: root)) }
        }
        var sends: [(BundleMember, RemotePath, WriteCondition)] = []
        for member in ordered where member.kind != .folder {
            let relative = try member.relative
            let existing = keeps(relative) ? reused[relative] : nil
            if let existing, member.kind == .file, let before = previous[relative], before.kind == .file,
               before.contentHash != nil, before.contentHash == member.contentHash, existing.size == member.size {
                continue  // the copy holds these bytes already
            }
            if member.kind == .symlink, existing != nil { continue }  // same target, or removed above
            // Nobody else writes below our scratch name, so the copied file is replaced
            // by delete-then-create: an If-Match on a copy made this second would meet
            // Apache's weak ETag and wait.
            if existing != nil { try await store.delete(try member.path(in: root), version: nil) }
            sends.append((member, try member.path(in: root), .mustNotExist))
        }
        let total = sends.reduce(Int64(0)) { $0 + ($1.0.kind == .file ? $1.0.size : 0) }
        let done = Mutex<Int64>(0)
        try await forEachConcurrently(sends, width: 4) { (send) async throws(ProviderError) in
            let (member, target, condition) = send
            if member.kind == .symlink {
                _ = try await self.store.makeSymlink(at: target, target: member.symlinkTarget ?? "", condition: condition)
            } else {
                let source = contents.directory.appendingPathComponent(member.relativePath)
                _ = try await self.store.upload(from: source, to: target, condition: condition, progress: nil)
                let bytes = done.withLock { $0 += member.size; return $0 }
                progress?(bytes, total)
            }
        }
    }

    /// Puts the new version built at `scratch.building` in place of the bundle at `path`,
    /// whose version must be `base` (nil: nothing may be there). Where the store can, one
    /// guarded exchange (the old version, then at `building`, is exactly `base` and deleted;
    /// after a crash the clean-up deletes it as it would a half-built version). Elsewhere the
    /// old version is checked just before and, set aside, once more after the new one is in
    /// — so the bundle is missing only between two renames. Changed by another client in
    /// between, it goes back and ours is withdrawn (`versionMismatch`: the next plan keeps
    /// both versions).
    func swapIn(_ scratch: BundleScratch, at path: RemotePath, base: ETag?) async throws(ProviderError) {
        guard let base else {
            _ = try await store.move(scratch.building, to: path, version: nil)
            return
        }
        let exchanged: Bool
        do { exchanged = try await store.exchangeBundle(path, with: scratch.building, version: base) } catch where error.code == .noSuchItem {
            throw ProviderError(.versionMismatch, "\(path) was deleted on the server since version \(base)")
        }
        if exchanged {
            try await removeIfPresent(scratch.building)
            return
        }
        try await requireBundleVersion(at: path, base)
        do {
            _ = try await store.move(path, to: scratch.aside, version: nil)
        } catch where error.code == .noSuchItem {
            throw ProviderError(.versionMismatch, "\(path) was deleted on the server since version \(base)")
        }
        do {
            _ = try await store.move(scratch.building, to: path, version: nil)
        } catch {
            try? await putBack(scratch.aside, to: path)
            throw error
        }
        // Another client may have moved the folder meanwhile: the bundle and the version
        // set aside moved along, and are handled where they are now.
        guard let (there, aside) = try await listAside(scratch.aside) else { throw asideGone(path) }
        guard aside.entry.etag?.sameValue(as: base) == true else {
            let target = try there.parent.appending(path.name)
            _ = try await store.move(target, to: try there.parent.appending(scratch.building.name), version: nil)
            try await putBack(there, to: target)
            throw ProviderError(.versionMismatch, "\(path) changed on the server while it was replaced; it is kept")
        }
        try await removeAside(there, of: path)
    }

    /// Deletes the old version set aside at `aside`, once checked. It is first renamed to
    /// its doomed name (`BundleScratch.doomed`) in one MOVE and only then deleted: a DELETE
    /// of a folder the server carries out only in part (rclone removed one member of three,
    /// then answered 405, when another client moved the folder meanwhile: two-client test,
    /// rclone seed 1207 beside CPU hogs) must leave no half version under the aside name,
    /// which a clean-up puts back in place; a doomed one it only deletes. Gone from where it
    /// was, it moved along with a folder another client moved meanwhile (Apache seed 1207,
    /// rclone seed 1207 for a delete: `dir-A26/dir-A65/.tidesync-bundle-…-old` was left): it
    /// is looked for by its name, which only this write used, and handled where it is now.
    func removeAside(_ aside: RemotePath, of target: RemotePath) async throws(ProviderError) {
        let doomedName = BundleScratch.doomedName(of: aside.name)
        var at: RemotePath? = aside
        var doomed = try aside.parent.appending(doomedName)
        for _ in 0..<3 {
            guard let from = at else { break }
            doomed = try from.parent.appending(doomedName)
            do {
                _ = try await store.move(from, to: doomed, version: nil)
                break
            } catch where error.code == .noSuchItem {
                // Moved on with its folder, or renamed already by a MOVE whose answer was
                // lost (sent again, it met 404): then the doomed name is found below.
                at = try await found(named: aside.name).first
            }
        }
        // Neither deleted nor found: the journal entry stays, and the clean-up looks again.
        guard try await removeDoomed(doomed) else { throw asideGone(target) }
    }

    /// Deletes the doomed old version at `doomed`, or wherever its name is found when it
    /// is not there (its folder moved by another client); false when it is found nowhere.
    @discardableResult
    func removeDoomed(_ doomed: RemotePath) async throws(ProviderError) -> Bool {
        do {
            try await store.delete(doomed, version: nil)
            return true
        } catch where error.code == .noSuchItem {}
        let found = try await found(named: doomed.name)
        for moved in found { try await removeIfPresent(moved) }
        return !found.isEmpty
    }

    /// The version set aside at `aside`, listed where it is now: there, or, when another
    /// client moved its folder (or one above it) since, wherever its name — which only this
    /// write used — is found in the tree; nil when it is not found (a walk does not go into
    /// another client's scratch folders, so it may still be somewhere).
    func listAside(_ aside: RemotePath) async throws(ProviderError) -> (at: RemotePath, listing: (entry: RemoteEntry, members: [RemoteEntry]))? {
        do { return (aside, try await bundleListing(at: aside)) } catch where error.code == .noSuchItem {}
        guard let moved = try await found(named: aside.name).first else { return nil }
        return (moved, try await bundleListing(at: moved))
    }

    /// Where the item set aside at `aside` is now: there, or found by its name as
    /// `listAside` does; nil when it is not found.
    func locateAside(_ aside: RemotePath) async throws(ProviderError) -> RemotePath? {
        if try await exists(aside) { return aside }
        return try await found(named: aside.name).first
    }

    /// Every item in the tree named `name` (a scratch name, which only one write used).
    /// A walk is no snapshot: a folder another client moves while it runs, from a folder
    /// not listed yet into one already listed, is in neither listing. It is looked for
    /// only because it was just missed where it was, so when a walk finds nothing the tree
    /// is walked again (three walks in all) before it counts as not found.
    func found(named name: String) async throws(ProviderError) -> [RemotePath] {
        for _ in 0..<3 {
            let found = try await store.items(named: name)
            if !found.isEmpty { return found }
        }
        return []
    }

    /// A version set aside that cannot be found: the step fails and its journal entry, which
    /// names the scratch token, stays for `cleanUpScratch`.
    func asideGone(_ path: RemotePath) -> ProviderError {
        ProviderError(.noSuchItem, "\(path), set aside to be replaced or deleted, cannot be found on the server")
    }

    /// Moves the bundle at `path` to `scratch.aside` and checks it is still `base`; when it
    /// is not (another client changed it in the meantime), moves it back and throws `mismatch`.
    /// Returns where it is set aside — beside `path`, or where another client moved that
    /// folder meanwhile (two-client test, rclone seed 1207: a deleted bundle's old version
    /// was left in the folder moved away) — and nil when nothing is at `path`.
    func setAside(_ path: RemotePath, scratch: BundleScratch, base: ETag,
                  mismatch: ProviderError.Code) async throws(ProviderError) -> RemotePath? {
        do {
            _ = try await store.move(path, to: scratch.aside, version: nil)
        } catch where error.code == .noSuchItem {
            // A MOVE that landed though its answer was lost is sent again and meets 404.
            guard try await exists(scratch.aside) else { return nil }
        }
        guard let (there, aside) = try await listAside(scratch.aside) else { throw asideGone(path) }
        guard aside.entry.etag?.sameValue(as: base) == true else {
            try await putBack(there, to: try there.parent.appending(path.name))
            throw ProviderError(mismatch, "\(path) changed on the server since version \(base); it is kept")
        }
        return there
    }

    /// Moves a version set aside back to `path`.
    func putBack(_ aside: RemotePath, to path: RemotePath) async throws(ProviderError) {
        _ = try await store.move(aside, to: path, version: nil)
    }

    /// Deletes the bundle at `path` if it is still `version` (otherwise `deletionRejected`):
    /// set aside in one rename, so nobody sees it half-deleted, then deleted.
    func deleteBundle(_ path: RemotePath, version: ETag?, scratchToken: String) async throws(ProviderError) {
        let scratch = try BundleScratch(beside: path, token: scratchToken)
        guard let version else {
            try await removeIfPresent(path)
            return
        }
        guard let aside = try await setAside(path, scratch: scratch, base: version, mismatch: .deletionRejected) else {
            return  // gone already: a replay, or deleted there too
        }
        try await removeAside(aside, of: path)
    }

    /// Checks that the bundle at `path` is still `version` before a move: a store's own
    /// guard would compare the root folder's ETag, which does not follow the members.
    func requireBundleVersion(at path: RemotePath, _ version: ETag) async throws(ProviderError) {
        let now = try await bundleListing(at: path)
        guard now.entry.etag?.sameValue(as: version) == true else {
            throw ProviderError(.versionMismatch, "\(path) changed on the server since version \(version)")
        }
    }

    /// After a failed or interrupted bundle write at `target` (based on `base`, nil for a
    /// create): a version set aside goes back in place when nothing took its place; when our
    /// new version took it, the one set aside is deleted only if it is `base` (the version
    /// the write replaced) — a version another client wrote meanwhile is kept beside it
    /// under a conflict-copy name for `host` instead, added to the conflict list, and
    /// returned (the caller says so in its log). A half-built new version is removed, and
    /// so is a doomed old one (checked, and being deleted: never put back); an old version
    /// that is `base` is deleted through its doomed name too (`removeAside`).
    @discardableResult
    public func cleanUpScratch(beside target: RemotePath, token: String, base: ETag?,
                               host: String?) async throws(ProviderError) -> [RemotePath] {
        let scratch = try BundleScratch(beside: target, token: token)
        var kept: [RemotePath] = []
        try await removeIfPresent(scratch.doomed)
        if try await exists(scratch.aside) {
            if try await !exists(target) {
                try await putBack(scratch.aside, to: target)
            } else if let base, try await bundleListing(at: scratch.aside).entry.etag?.sameValue(as: base) == true {
                try await removeAside(scratch.aside, of: target)
            } else {
                let taken = Set(try await store.children(of: target.parent).map(\.path.name))
                let name = ConflictName.make(for: target.name, date: clock.now(), host: host ?? "recovered", taken: taken)
                let copy = try target.parent.appending(name)
                let aside = try await bundleListing(at: scratch.aside)
                _ = try await store.move(scratch.aside, to: copy, version: nil)
                try recordKeptVersion(of: target, at: copy, base: base, aside: aside)
                kept.append(copy)
            }
        }
        try await removeIfPresent(scratch.building)
        return try await kept + cleanUpMovedScratch(beside: target, scratch: scratch, token: token, base: base, host: host)
    }

    /// Lists the version set aside and kept as `copy` in the conflict list, so `tidesync
    /// conflicts` and `status` show it: it is another client's version, never this
    /// machine's, so its "local" stat is the kept version's size and modification time.
    private func recordKeptVersion(of target: RemotePath, at copy: RemotePath, base: ETag?,
                                   aside: (entry: RemoteEntry, members: [RemoteEntry])) throws(ProviderError) {
        let size = aside.members.reduce(Int64(0)) { $0 + $1.size }
        // Clamped: a server's date past 2262 (or before 1677) holds no Int64 of nanoseconds.
        let modified = aside.entry.modificationDate.map { Int64(exactly: ($0.timeIntervalSince1970 * 1e9).rounded()) ?? ($0.timeIntervalSince1970 < 0 ? .min : .max) } ?? 0
        try recordConflict(ConflictRecord(original: target, copy: copy, kind: .bundle, detectedAt: clock.now(), baseVersion: base,
                                          remoteVersion: nil, local: LocalStat(inode: 0, size: size, modificationTimeNanoseconds: modified)))
    }

    /// Another client may have moved the target's folder (or one above it) while the write
    /// ran: the scratch collections moved along with it, out of `cleanUpScratch`'s sight.
    /// When the folder is no longer where it was, the whole tree is searched for them (by
    /// their token, which only this write used, so no other client's scratch is touched)
    /// and each is cleaned up where it is now, as beside a target in that folder. Rare
    /// (a failed bundle write whose folder moved), so the walk of the tree is affordable.
    func cleanUpMovedScratch(beside target: RemotePath, scratch: BundleScratch, token: String, base: ETag?,
                             host: String?) async throws(ProviderError) -> [RemotePath] {
        guard !target.parent.isRoot, try await !exists(target.parent) else { return [] }
        var found: [RemotePath] = []
        for name in [scratch.building.name, scratch.aside.name, scratch.doomed.name] { found += try await store.items(named: name).map(\.parent) }
        var kept: [RemotePath] = []
        for folder in Set(found) where folder != target.parent {
            kept += try await cleanUpScratch(beside: try folder.appending(target.name), token: token, base: base, host: host)
        }
        return kept
    }

    /// Records a bundle both sides agree on, with its manifest.
    @discardableResult
    public func recordBundle(at path: RemotePath, item: ItemIdentifier?, remote: RemoteEntry, local: LocalStat,
                             members: [BundleMember], operation: Int64?) throws(ProviderError) -> ItemRecord {
        try record(at: path, item: item, kind: .bundle, remote: remote, local: local, bundleMembers: members, operation: operation)
    }

    func exists(_ path: RemotePath) async throws(ProviderError) -> Bool {
        do { _ = try await store.entry(at: path); return true } catch where error.code == .noSuchItem { return false }
    }

    func removeIfPresent(_ path: RemotePath) async throws(ProviderError) {
        do { try await store.delete(path, version: nil) } catch where error.code == .noSuchItem {}
    }
}

/// Runs `body` for every element, `width` at a time; the first failure is thrown once the
/// running ones end (no new ones start).
public func forEachConcurrently<Element: Sendable>(_ elements: [Element], width: Int,
                                                   _ body: @escaping @Sendable (Element) async throws(ProviderError) -> Void)
    async throws(ProviderError) {
    let failure = await withTaskGroup(of: ProviderError?.self) { group -> ProviderError? in
        var next = 0
        var first: ProviderError?
        func start() {
            guard first == nil, next < elements.count else { return }
            let element = elements[next]
            next += 1
            group.addTask {
                do throws(ProviderError) { try await body(element); return nil } catch { return error }
            }
        }
        for _ in 0..<max(1, width) { start() }
        while let result = await group.next() {
            if let result, first == nil { first = result }
            start()
        }
        return first
    }
    if let failure { throw failure }
}
