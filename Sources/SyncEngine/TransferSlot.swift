// A domain's `transfers` bound its network transfers, not the disk work around them (issue
// 16 item 4). A plain download step holds one of the runner's slots while its bytes travel;
// once its last byte is written, the store hands the slot back (`release`) and the step
// goes on without it: the fsync of the file, its rename into place with the folder's fsync,
// and the state DB's record. So the next transfer starts at once, and the disk work of many
// small files overlaps (a journaled ext4 commits concurrent fsyncs together: 3 000 files
// written and fsynced one at a time took 1.46 s here, sixteen at a time 0.26 s).

/// The hook through which a store tells the plan runner that the current step's transfer is
/// over (a task-local value: the runner sets it around a step that may hand its slot back
/// early, and only there).
public final class TransferSlot: Sendable {
    /// The current step's slot; nil outside a step that may hand its slot back.
    @TaskLocal public static var current: TransferSlot?

    private let released: @Sendable () -> Void

    /// A slot that calls `released` when handed back.
    public init(released: @escaping @Sendable () -> Void) { self.released = released }

    /// Says that the current step's network transfer is over: every byte of the download is
    /// written (not yet fsynced). Nothing happens outside a step that listens; a second call
    /// is ignored by the runner.
    public static func release() { current?.released() }
}
