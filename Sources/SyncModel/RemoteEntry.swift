import Foundation

/// One item as a remote store lists it: the remote side of the three states.
public struct RemoteEntry: Hashable, Sendable, Codable, CustomStringConvertible {
    public var path: RemotePath
    /// `file`, `folder` or `symlink`; a store never reports `bundle` (that is a local decision).
    public var kind: ItemKind
    /// Bytes of content; 0 for folders.
    public var size: Int64
    /// The content version. Nil only when a server sent none (then every listing is a change).
    public var etag: ETag?
    /// The server's stable id (`oc:fileid`, or the inode of a local-directory store), kept across renames.
    public var fileID: String?
    /// Last modification time as the server reports it.
    public var modificationDate: Date?
    /// For symlinks: the link's target, exactly as written.
    public var symlinkTarget: String?
    /// Content checksums the server offers, as it wrote them (`SHA1:… MD5:…`, Nextcloud's
    /// `oc:checksums`); nil when it offers none.
    public var checksums: String?

    public init(path: RemotePath, kind: ItemKind, size: Int64, etag: ETag?, fileID: String? = nil,
                modificationDate: Date? = nil, symlinkTarget: String? = nil, checksums: String? = nil) {
        self.path = path
        self.kind = kind
        self.size = size
        self.etag = etag
        self.fileID = fileID
        self.modificationDate = modificationDate
        self.symlinkTarget = symlinkTarget
        self.checksums = checksums
    }

    public var description: String {
        "\(kind.rawValue) \(path) size=\(size) etag=\(etag.map(String.init(describing:)) ?? "-")"
    }
}

/// The precondition a write to the remote is guarded by.
public enum WriteCondition: Hashable, Sendable {
    /// The target must not exist (`If-None-Match: *`): a create.
    case mustNotExist
    /// The target must still hold this version (`If-Match`): a modify based on it.
    case mustMatch(ETag)
}

/// Receives the bytes moved so far by a transfer. Called from any thread, in order.
public typealias TransferProgress = @Sendable (_ bytesDone: Int64, _ bytesTotal: Int64?) -> Void
