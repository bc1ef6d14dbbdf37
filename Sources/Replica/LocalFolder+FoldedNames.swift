import Glibc
import SyncEngine

/// A file system that folds names (ext4 or f2fs with `casefold` on a folder marked
/// `chattr +F`: case and Unicode normalisation) takes `café` in NFD for the NFC `café`
/// already there, and `Café` for `café`. Creating such a name reports EEXIST although no
/// entry has its bytes. tidesync then never overwrites or merges the two and never renames
/// the server's item: the second name is not brought down (the step fails as a skipped
/// item, listed by `status` with what to do) and the first stays as it is.
extension LocalFolder {
    /// True when the folder holding `path` has an entry with exactly `path`'s name (bytes).
    /// An unreadable folder answers true: only positive evidence reads as folding.
    func listsExactly(_ path: RemotePath) -> Bool {
        guard let directory = opendir(absolute(path.parent)) else { return true }
        defer { closedir(directory) }
        let wanted = Array(path.name.utf8)
        while let entry = readdir(directory) {
            let matches = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                raw.prefix { $0 != 0 }.elementsEqual(wanted)
            }
            if matches { return true }
        }
        return false
    }

    /// The error for a name the file system folded onto another entry of its folder.
    func foldedName(_ path: RemotePath) -> ProviderError {
        ProviderError(.cannotSynchronize,
                      "\(absolute(path)) is not brought down: the sync folder's file system folds names (casefold) and takes it for another name in its folder, and tidesync never merges or overwrites the two or renames them on the server. Rename one of them on the server, or sync into a folder without casefold (chattr -F on an empty folder), to get both",
                      underlying: "EEXIST for a name the folder does not list")
    }
}
