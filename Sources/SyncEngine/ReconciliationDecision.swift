/// How one side of one item compares with the base.
struct SideChange: Equatable {
    /// The side holds the item now (at its current place, of a compatible kind).
    var present: Bool
    /// The side held the item at the last sync.
    var basePresent: Bool
    /// Both hold it and the content differs: another local stat, another remote ETag
    /// value (weakness ignored), another symlink target. Never set for folders.
    var edited: Bool
    /// The side holds it somewhere other than its parent's place plus its name.
    var moved: Bool

    var created: Bool { present && !basePresent }

    /// True when this side's version is something the other side has not seen: new,
    /// edited, or (for anything but a folder) moved. Folders count by existence only.
    func touched(folder: Bool) -> Bool { created || edited || (moved && !folder) }
}

/// The per-item decision, before it is turned into actions with paths.
enum Verdict: Equatable {
    /// Nothing to transfer (moves, if any, still apply).
    case keep
    /// Bring the local version to the remote.
    case push
    /// Bring the remote version to the local side.
    case pull
    /// Both versions changed: keep both (or find out they are the same bytes).
    case conflict
    /// Gone locally, unchanged remotely: delete it remotely.
    case removeRemote
    /// Gone remotely, unchanged locally: delete it locally.
    case removeLocal
    /// Gone on both sides: drop the row.
    case forget

    var removes: Bool { self == .removeRemote || self == .removeLocal || self == .forget }

    /// The three-way rule. Data changed since the base is never deleted or overwritten:
    /// an edit beats a delete, two edits keep both.
    static func decide(folder: Bool, local l: SideChange, remote r: SideChange) -> Verdict {
        switch (l.present, r.present) {
        case (false, false):
            return .forget
        case (true, true):
            if folder { return .keep }
            if l.created || r.created || (l.edited && r.edited) { return .conflict }
            return l.edited ? .push : r.edited ? .pull : .keep
        case (true, false):
            // Never on the remote yet (a crash before the upload), or deleted there.
            return !r.basePresent || l.touched(folder: folder) ? .push : .removeLocal
        case (false, true):
            return !l.basePresent || r.touched(folder: folder) ? .pull : .removeRemote
        }
    }
}

extension SideChange {
    /// The local side of `record` given what the scan saw at its current place.
    static func local(_ record: ItemRecord, seen: LocalObservation?, moved: Bool) -> SideChange {
        let folder = record.kind == .folder
        let basePresent = folder || record.local != nil
        var edited = false
        if let seen, basePresent, !folder {
            edited = seen.stat != record.local || (record.kind == .symlink && seen.symlinkTarget != record.symlinkTarget)
        }
        return SideChange(present: seen != nil, basePresent: basePresent, edited: edited, moved: moved)
    }

    /// The remote side of `record` given what the walk saw at its current place.
    static func remote(_ record: ItemRecord, seen: RemoteEntry?, moved: Bool) -> SideChange {
        let folder = record.kind == .folder
        let basePresent = folder || record.remoteETag != nil
        var edited = false
        if let seen, basePresent, !folder {
            let sameVersion = seen.etag.map { now in record.remoteETag.map(now.sameValue(as:)) ?? false } ?? false
            edited = !sameVersion || (record.kind == .symlink && seen.symlinkTarget != record.symlinkTarget)
        }
        return SideChange(present: seen != nil, basePresent: basePresent, edited: edited, moved: moved)
    }
}
