import SyncEngine

extension SyncPass {
    /// The sibling names, on either side or in the state DB, that differ only in Unicode
    /// normalisation (`NormalisationClash`). The server's names are not ours: both are kept
    /// as they are on the server (no MOVE, no write the user did not make) and held side by
    /// side here, as Linux file systems do; the pass only reports them for `status`.
    func normalisationTwins(remote: [RemotePath: RemoteEntry], local: [RemotePath: LocalObservation],
                            recorded: [RemotePath: ItemRecord]) -> [[RemotePath]] {
        // Each path once (the three sides mostly hold the same ones), and only paths with a
        // non-ASCII name: no other name has a second normalisation form.
        func candidate(_ path: RemotePath) -> Bool { path.name.utf8.contains { $0 >= 0x80 } }
        var paths = recorded.keys.filter(candidate)
        paths += local.keys.filter { candidate($0) && recorded[$0] == nil }
        paths += remote.keys.filter { candidate($0) && recorded[$0] == nil && local[$0] == nil }
        return NormalisationClash.twins(among: paths)
    }
}
