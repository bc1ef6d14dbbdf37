// System errors (errno) as the port's errors, with what happens next.
import Glibc
import SyncEngine

extension LocalFolder {
    /// A system error as the port's error: a full disk parks the domain.
    static func error(_ code: Int32, _ what: String) -> ProviderError {
        let cause = String(cString: strerror(code))
        switch code {
        case ENOSPC, EDQUOT:
            return ProviderError(.localDiskFull, "the disk holding the sync folder is full; free some space (\(what))", underlying: cause)
        case ENOENT:
            return ProviderError(.parentMissing, "\(what): its folder is gone", underlying: cause)
        default:
            return ProviderError(.cannotSynchronize, what, underlying: cause)
        }
    }
}
