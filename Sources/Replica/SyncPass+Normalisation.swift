import SyncEngine

extension SyncPass {
    /// The sibling names, on either side or in the state DB, that differ only in Unicode
    /// normalisation (`NormalisationClash`). The server's names are not ours: both are kept
    /// as they are on the server (no MOVE, no write the user did not make) and held side by
    /// side here, as Linux file systems do; the pass only reports them for `status`.
    func normalisationTwins(remote: [RemotePath: RemoteEntry], local: [RemotePath: LocalObservation],
                            recorded: [RemotePath: ItemRecord]) -> [[RemotePath]] {
        NormalisationClash.twins(among: [AnySequence(remote.keys), AnySequence(local.keys), AnySequence(recorded.keys)].joined())
    }
}
