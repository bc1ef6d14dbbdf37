import NIOHTTP1
import SyncEngine

extension HTTPResponseStatus {
    /// The engine's error for an unexpected status of `method` on `path`. A 412 is
    /// reported as `versionMismatch` here; callers confirm it with a fresh PROPFIND first.
    func providerError(_ method: String, _ path: RemotePath, location: String? = nil) -> ProviderError {
        let what = "\(method) \(path.isRoot ? "/" : path.description)"
        let underlying = "HTTP \(code) \(reasonPhrase)"
        switch code {
        case 401:
            return ProviderError(.notAuthenticated, "the server refused \(what): check the user name and password", underlying: underlying)
        case 403:
            // Authenticated, but not allowed this one item: never a reason to park the domain.
            return ProviderError(.permissionDenied,
                                 "the server denies \(what) (permission denied for that item); it is skipped and tried again later",
                                 underlying: underlying)
        case 404, 410:
            return ProviderError(.noSuchItem, "\(path) does not exist on the server", underlying: underlying)
        case 409:
            return ProviderError(.parentMissing, "the folder \(path.parent) does not exist on the server", underlying: underlying)
        case 412:
            return ProviderError(.versionMismatch, "\(path) changed on the server", underlying: underlying)
        case 423:
            return ProviderError(.locked, "\(path) is locked on the server; will retry", underlying: underlying)
        case 507:
            return ProviderError(.insufficientQuota, "the server has no space left for \(what)", underlying: underlying)
        case 300..<400:
            return ProviderError(.cannotSynchronize,
                                 "the server redirected \(what) to \(location ?? "another URL"); set remote to the final URL",
                                 underlying: underlying)
        case 502, 503, 504:
            return ProviderError(.serverUnreachable, "the server (or a proxy before it) is unavailable for \(what); will retry", underlying: underlying)
        case 500..<600 where method != "PROPFIND":
            // About this one item (lighttpd fails a PUT of a name too long for its temporary
            // name with 500): the item backs off, the rest syncs on.
            return ProviderError(.serverFailedItem, "the server failed \(what); this item is tried again later", underlying: underlying)
        case 500..<600:
            // A listing the pass cannot do without.
            return ProviderError(.serverUnreachable, "the server failed \(what); will retry", underlying: underlying)
        default:
            return ProviderError(.cannotSynchronize, "the server answered \(what) unexpectedly", underlying: underlying)
        }
    }
}
