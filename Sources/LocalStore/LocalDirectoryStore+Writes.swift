import Glibc
import Foundation
import SyncEngine
import SystemCalls

extension LocalDirectoryStore {
    public func download(_ path: RemotePath, range: ByteRange?, version: ETag?, to destination: URL,
                         progress: TransferProgress?) async throws(ProviderError) -> ETag? {
        let output = open(destination.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw SystemError.destinationError(errno, "cannot create \(destination.path)") }
        defer { close(output) }
        let (etag, _) = try copyOut(path, range: range, version: version, into: output, at: { _ in 0 }, what: destination.path,
                                    progress: progress)
        TransferSlot.release()
        let failure = TransferSlot.callerSyncs ? 0 : await OffPool.fsync(output)
        guard failure == 0 else { throw SystemError.destinationError(failure, "cannot write \(destination.path)") }
        return etag
    }

    public func download(_ path: RemotePath, range: ByteRange, version: ETag, intoDescriptor descriptor: Int32,
                         progress: TransferProgress?) async throws(ProviderError) -> Int64 {
        try copyOut(path, range: range, version: version, into: descriptor, at: { $0.offset }, what: "a placeholder",
                    progress: progress).length
    }

    /// Copies `range` (nil: all) of the file at `path`, which must be `version` when given,
    /// into `output` at the offset `at` gives for the range clamped to the file's end.
    /// Returns the version and how many bytes were copied.
    private func copyOut(_ path: RemotePath, range: ByteRange?, version: ETag?, into output: Int32, at: (ByteRange) -> Int64,
                         what destination: String, progress: TransferProgress?) throws(ProviderError) -> (ETag, length: Int64) {
        try checkRoot()
        let source = fullPath(path)
        let input = open(source, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard input >= 0 else {
            if errno == ELOOP { throw ProviderError(.cannotSynchronize, "\(path) is a symlink; it has no contents to download") }
            throw SystemError.providerError(errno, "cannot open \(path) in the store")
        }
        defer { close(input) }
        let before = try FileStatus.of(descriptor: input, path: source)
        guard before.kind == .file else { throw ProviderError(.cannotSynchronize, "\(path) is not a file") }
        if let version, !before.etag.sameValue(as: version) {
            throw ProviderError(.versionMismatch, "\(path) changed in the store since version \(version)")
        }
        let wanted = range.map { ByteRange(offset: $0.offset, length: max(0, min($0.end, before.size) - $0.offset)) }
            ?? ByteRange(offset: 0, length: before.size)
        do {
            try FileCopy.copy(from: input, at: wanted.offset, to: output, at: at(wanted), length: wanted.length,
                              progress: progress, what: "\(path)")
        } catch where error.code == .insufficientQuota {
            // Reading never reports a full disk: it is the destination's, the local one.
            throw SystemError.destinationError(ENOSPC, "cannot write \(destination)")
        }
        // Writes in the store replace files by rename, so the open file keeps one version;
        // an in-place writer outside tidesync would show up here.
        let after = try FileStatus.of(descriptor: input, path: source)
        guard after.etag == before.etag else {
            throw ProviderError(.versionMismatch, "\(path) was modified in place while it was read; try again")
        }
        return (before.etag, wanted.length)
    }

    public func upload(from source: URL, to path: RemotePath, condition: WriteCondition,
                       progress: TransferProgress?) async throws(ProviderError) -> RemoteEntry {
        try checkRoot()
        try checkParent(of: path)
        let input = open(source.path, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw SystemError.providerError(errno, "cannot open \(source.path) for upload") }
        defer { close(input) }
        let sourceStatus = try FileStatus.of(descriptor: input, path: source.path)
        let size = sourceStatus.size
        return try writeTemporary(beside: path) { output, temporary throws(ProviderError) in
            try FileCopy.copy(from: input, at: 0, to: output, at: 0, length: size, progress: progress,
                              what: "\(path)")
            guard fsync(output) == 0 else { throw SystemError.providerError(errno, "cannot write \(temporary)") }
            guard try FileStatus.of(descriptor: input, path: source.path) == sourceStatus else {
                throw ProviderError(.cannotSynchronize, "\(source.path) changed while it was uploaded; it will be sent again")
            }
        } install: { temporary throws(ProviderError) in
            try lock.withLock { () throws(ProviderError) in
                try check(condition, at: fullPath(path), path: path)
                try rename(temporary, to: fullPath(path))
            }
        }
    }

    public func makeFolder(at path: RemotePath) async throws(ProviderError) -> RemoteEntry {
        try checkRoot()
        try checkParent(of: path)
        guard mkdir(fullPath(path), 0o755) == 0 else {
            throw SystemError.providerError(errno, "cannot create the folder \(path) in the store")
        }
        syncDirectory(fullPath(path.parent))
        return try await entry(at: path)
    }

    public func makeSymlink(at path: RemotePath, target: String,
                            condition: WriteCondition) async throws(ProviderError) -> RemoteEntry {
        try checkRoot()
        try checkParent(of: path)
        let temporary = fullPath(path.parent) + "/" + TemporaryName.make()
        guard symlink(target, temporary) == 0 else {
            throw SystemError.providerError(errno, "cannot create the symlink \(path) in the store")
        }
        do {
            try lock.withLock { () throws(ProviderError) in
                try check(condition, at: fullPath(path), path: path)
                try rename(temporary, to: fullPath(path))
            }
        } catch {
            unlink(temporary)
            throw error
        }
        syncDirectory(fullPath(path.parent))
        return try await entry(at: path)
    }

    public func move(_ source: RemotePath, to destination: RemotePath,
                     version: ETag?) async throws(ProviderError) -> RemoteEntry {
        try checkRoot()
        try lock.withLock { () throws(ProviderError) in
            if let version { try check(.mustMatch(version), at: fullPath(source), path: source) }
            guard try FileStatus.of(fullPath(source)) != nil else {
                throw ProviderError(.noSuchItem, "\(source) does not exist in the store")
            }
            try checkParent(of: destination)
            try check(.mustNotExist, at: fullPath(destination), path: destination)
            try rename(fullPath(source), to: fullPath(destination))
        }
        syncDirectory(fullPath(destination.parent))
        return try await entry(at: destination)
    }

    /// Copies the tree at `source` to the free `destination`, symlinks as symlinks. The copy
    /// is made under a temporary name and renamed into place, so it appears whole; the
    /// temporary is the companion of a locked temporary file (`TemporaryName.companion`),
    /// so a copy killed halfway is removed by the next walk.
    public func copy(_ source: RemotePath, to destination: RemotePath) async throws(ProviderError) -> Bool {
        try checkRoot()
        guard try FileStatus.of(fullPath(source)) != nil else {
            throw ProviderError(.noSuchItem, "\(source) does not exist in the store")
        }
        try checkParent(of: destination)
        let lockPath = fullPath(destination.parent) + "/" + TemporaryName.make()
        let lockFile = open(lockPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard lockFile >= 0 else { throw SystemError.providerError(errno, "cannot create a temporary file in \(destination.parent)") }
        flock(lockFile, LOCK_EX)  // held until the copy is in place or removed
        defer {
            unlink(lockPath)
            close(lockFile)
        }
        let temporary = TemporaryName.companion(of: lockPath)
        do {
            try FileManager.default.copyItem(atPath: fullPath(source), toPath: temporary)
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw ProviderError(.cannotSynchronize, "cannot copy \(source) to \(destination) in the store",
                                underlying: "\(error)")
        }
        do {
            try lock.withLock { () throws(ProviderError) in
                try check(.mustNotExist, at: fullPath(destination), path: destination)
                try rename(temporary, to: fullPath(destination))
            }
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw error
        }
        syncDirectory(fullPath(destination.parent))
        return true
    }

    /// One `renameat2(RENAME_EXCHANGE)` under the store lock, after the bundle's version is
    /// checked under the same lock: no other tidesync process can change it in between.
    /// False where the file system has no exchange (the caller uses two moves).
    public func exchangeBundle(_ path: RemotePath, with replacement: RemotePath,
                               version: ETag) async throws(ProviderError) -> Bool {
        try checkRoot()
        return try lock.withLock { () throws(ProviderError) -> Bool in
            guard let status = try FileStatus.of(fullPath(path)) else {
                throw ProviderError(.noSuchItem, "\(path) does not exist in the store")
            }
            guard status.kind == .folder else {
                throw ProviderError(.versionMismatch, "\(path) is no longer a bundle in the store")
            }
            let members = BundleManifest.members(of: path, in: try walk(path).complete(below: path))
            let current = BundleManifest.bundleEntry(try entry(for: path, status: status), members: members)
            guard current.etag?.sameValue(as: version) == true else {
                throw ProviderError(.versionMismatch, "\(path) changed in the store since version \(version)")
            }
            guard try FileStatus.of(fullPath(replacement))?.kind == .folder else {
                throw ProviderError(.noSuchItem, "\(replacement) does not exist in the store")
            }
            if RenameAt2.rename(fullPath(replacement), fullPath(path), flags: RenameAt2.exchange) != 0 {
                if errno == ENOSYS || errno == EINVAL { return false }
                throw SystemError.providerError(errno, "cannot exchange \(replacement) with \(path) in the store")
            }
            syncDirectory(fullPath(path.parent))
            return true
        }
    }

    public func delete(_ path: RemotePath, version: ETag?) async throws(ProviderError) {
        try checkRoot()
        guard !path.isRoot else { throw ProviderError(.cannotSynchronize, "refusing to delete the store's root") }
        let trash = fullPath(path.parent) + "/" + TemporaryName.makeTrash()
        let kind = try lock.withLock { () throws(ProviderError) -> ItemKind in
            if let version { try check(.mustMatch(version), at: fullPath(path), path: path) }
            guard let status = try FileStatus.of(fullPath(path)) else {
                throw ProviderError(.noSuchItem, "\(path) does not exist in the store")
            }
            // A folder is renamed away first, so nobody sees it half-deleted.
            if status.kind == .folder { try rename(fullPath(path), to: trash) }
            else if unlink(fullPath(path)) != 0 { throw SystemError.providerError(errno, "cannot delete \(path)") }
            return status.kind
        }
        if kind == .folder { try? FileManager.default.removeItem(atPath: trash) }
        syncDirectory(fullPath(path.parent))
    }

    /// Creates a temporary file beside `path`, lets `fill` write it, then `install` it;
    /// removes the temporary on any failure. Returns the installed entry.
    func writeTemporary(beside path: RemotePath,
                        fill: (Int32, String) throws(ProviderError) -> Void,
                        install: (String) throws(ProviderError) -> Void) throws(ProviderError) -> RemoteEntry {
        let temporary = fullPath(path.parent) + "/" + TemporaryName.make()
        let output = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard output >= 0 else { throw SystemError.providerError(errno, "cannot create a temporary file in \(path.parent)") }
        flock(output, LOCK_EX)  // held until close: marks the temporary as in use (TemporaryName)
        do {
            defer { close(output) }
            try fill(output, temporary)
            try install(temporary)
            syncDirectory(fullPath(path.parent))
            return try entry(for: path, status: FileStatus.of(descriptor: output, path: temporary))
        } catch {
            unlink(temporary)
            throw error
        }
    }

    func rename(_ from: String, to: String) throws(ProviderError) {
        guard Glibc.rename(from, to) == 0 else {
            throw SystemError.providerError(errno, "cannot move \(from) to \(to)")
        }
    }

    /// fsyncs a directory so a rename in it survives a crash; best effort.
    func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}

/// Copies bytes between descriptors with pread/pwrite in 1 MiB chunks.
enum FileCopy {
    static let chunkSize = 1 << 20

    static func copy(from input: Int32, at inputOffset: Int64, to output: Int32, at outputOffset: Int64,
                     length: Int64, progress: TransferProgress?, what: String) throws(ProviderError) {
        // No larger than the copy: a small file's copy zeroed a whole MiB (2 % of a
        // 10 000-file download's time).
        var buffer = [UInt8](repeating: 0, count: Int(min(Int64(chunkSize), max(length, 1))))
        var done: Int64 = 0
        while done < length {
            let want = Int(min(Int64(chunkSize), length - done))
            let got = buffer.withUnsafeMutableBytes { pread(input, $0.baseAddress, want, off_t(inputOffset + done)) }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { throw SystemError.providerError(errno, "cannot read \(what)") }
            guard got > 0 else {
                throw ProviderError(.versionMismatch, "\(what) became shorter while it was copied; try again")
            }
            var written = 0
            while written < got {
                let n = buffer.withUnsafeBytes {
                    pwrite(output, $0.baseAddress! + written, got - written, off_t(outputOffset + done + Int64(written)))
                }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { throw SystemError.providerError(errno, "cannot write \(what)") }
                written += n
            }
            done += Int64(got)
            progress?(done, length)
        }
    }
}
