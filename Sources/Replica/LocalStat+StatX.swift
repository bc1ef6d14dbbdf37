import SyncEngine
import SystemCalls

extension LocalStat {
    /// The identity and shape `statx` gave.
    init(_ info: StatX) {
        self.init(inode: info.inode, size: info.size, modificationTimeNanoseconds: info.modificationNanoseconds,
                  birthNanoseconds: info.birthNanoseconds)
    }
}
