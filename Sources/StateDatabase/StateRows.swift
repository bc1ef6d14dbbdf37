import Foundation
import GRDB
import SyncEngine
import SyncModel

/// A row that does not decode into the engine's types: a value outside what the schema's
/// CHECKs allow, which only a damaged file or a foreign writer can produce.
struct UndecodableRow: Error, CustomStringConvertible {
    let description: String
}

/// The columns of `item` that hold an `ItemRecord`, in the order `ItemColumn.selection` selects
/// them; decoding reads by position so the hot paths skip name lookups.
enum ItemColumn: Int, CaseIterable {
    case id, parentID, name, kind, size, remoteETag, remoteETagWeak, remoteFileID, symlinkTarget
    case contentHash, localInode, localSize, localMtimeNanoseconds, materialization, pinState, localBirthNanoseconds

    var sqlName: String {
        switch self {
        case .id: "id"
        case .parentID: "parent_id"
        case .name: "name"
        case .kind: "kind"
        case .size: "size"
        case .remoteETag: "remote_etag"
        case .remoteETagWeak: "remote_etag_weak"
        case .remoteFileID: "remote_file_id"
        case .symlinkTarget: "symlink_target"
        case .contentHash: "content_hash"
        case .localInode: "local_inode"
        case .localSize: "local_size"
        case .localMtimeNanoseconds: "local_mtime_ns"
        case .materialization: "materialization"
        case .pinState: "pin_state"
        case .localBirthNanoseconds: "local_birth_ns"
        }
    }

    /// `item.id, item.parent_id, …`: the select list matching the raw values.
    static let selection = allCases.map { "item.\($0.sqlName)" }.joined(separator: ", ")
    /// `id, parent_id, …`: the insert list matching `ItemRecord.databaseArguments`.
    static let insertList = allCases.map(\.sqlName).joined(separator: ", ")
    /// `?, ?, …`, one per column.
    static let placeholders = allCases.map { _ in "?" }.joined(separator: ", ")
    /// `parent_id = excluded.parent_id, …` for every column but the key.
    static let updateFromExcluded = allCases.dropFirst()
        .map { "\($0.sqlName) = excluded.\($0.sqlName)" }.joined(separator: ", ")
}

extension Row {
    func value<Value: DatabaseValueConvertible>(_ column: ItemColumn, as _: Value.Type = Value.self) throws -> Value {
        try decode(Value.self, atIndex: column.rawValue)
    }
}

extension ItemRecord {
    /// Decodes a row selected with `ItemColumn.selection`.
    init(row: Row) throws {
        let id = try row.value(.id, as: String.self)
        func parse<T: RawRepresentable<String>>(_ column: ItemColumn, _: T.Type) throws -> T {
            let raw = try row.value(column, as: String.self)
            guard let value = T(rawValue: raw) else {
                throw UndecodableRow(description: "item \(id) has \(column.sqlName) '\(raw)', which this tidesync does not know")
            }
            return value
        }
        let etag = try row.value(.remoteETag, as: String?.self).map {
            ETag(value: $0, isWeak: try row.value(.remoteETagWeak, as: Bool.self))
        }
        var local: LocalStat?
        if let inode = try row.value(.localInode, as: Int64?.self) {
            local = LocalStat(inode: UInt64(bitPattern: inode),
                              size: try row.value(.localSize),
                              modificationTimeNanoseconds: try row.value(.localMtimeNanoseconds),
                              birthNanoseconds: try row.value(.localBirthNanoseconds))
        }
        self.init(id: ItemIdentifier(id),
                  parentID: try row.value(.parentID, as: String?.self).map(ItemIdentifier.init),
                  name: try row.value(.name),
                  kind: try parse(.kind, ItemKind.self),
                  size: try row.value(.size),
                  remoteETag: etag,
                  remoteFileID: try row.value(.remoteFileID),
                  symlinkTarget: try row.value(.symlinkTarget),
                  contentHash: try row.value(.contentHash),
                  local: local,
                  materialization: try parse(.materialization, Materialization.self),
                  pinState: try parse(.pinState, PinState.self))
    }

    /// The values for `ItemColumn.insertList`, in its order.
    var databaseArguments: StatementArguments {
        [id.rawValue, parentID?.rawValue, name, kind.rawValue, size,
         remoteETag?.value, remoteETag?.isWeak ?? false, remoteFileID, symlinkTarget,
         contentHash, local.map { Int64(bitPattern: $0.inode) }, local?.size,
         local?.modificationTimeNanoseconds, materialization.rawValue, pinState.rawValue, local?.birthNanoseconds ?? 0]
    }
}

extension PendingOperation {
    /// The select list matching `init(row:)`.
    static let selection = "id, item_id, kind, payload, created_at, attempts, not_before, last_error"

    /// Decodes a row selected with `selection`.
    init(row: Row) throws {
        self.init(id: try row.decode(atIndex: 0),
                  itemID: try row.decode(String?.self, atIndex: 1).map(ItemIdentifier.init),
                  kind: try row.decode(atIndex: 2),
                  payload: try row.decode(atIndex: 3),
                  createdAt: Date(timeIntervalSince1970: try row.decode(atIndex: 4)),
                  attempts: try row.decode(atIndex: 5),
                  notBefore: try row.decode(Double?.self, atIndex: 6).map(Date.init(timeIntervalSince1970:)),
                  lastError: try row.decode(atIndex: 7))
    }

    /// The values for `item_id, kind, payload, created_at, attempts, not_before, last_error`.
    var databaseArguments: StatementArguments {
        [itemID?.rawValue, kind, payload, createdAt.timeIntervalSince1970, attempts,
         notBefore?.timeIntervalSince1970, lastError]
    }
}
