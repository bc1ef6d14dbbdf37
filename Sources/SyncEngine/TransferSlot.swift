// A domain's `transfers` bound its network transfers, not the disk work around them (issue
// 16 item 4). A plain download step holds one of the runner's slots while its bytes travel;
// once its last byte is written, the store hands the slot back (`release`) and the step
// goes on without it: making the file durable, its rename into place, and the state DB's
// record. So the next transfer starts at once, and the disk work of many small files is
// shared (a round of them is made durable by one file-system sync, `callerSyncs`, and
// recorded in one transaction).

/// The hook through which a store tells the plan runner that the current step's transfer is
/// over (a task-local value: the runner sets it around a step that may hand its slot back
/// early, and only there).
public final class TransferSlot: Sendable {
    /// The current step's slot; nil outside a step that may hand its slot back.
    @TaskLocal public static var current: TransferSlot?

    private let released: @Sendable () -> Void

    /// A slot that calls `released` when handed back.
    public init(released: @escaping @Sendable () -> Void) { self.released = released }

    /// True inside a whole download whose caller makes the written file durable itself,
    /// with others at once, before it puts it in place and records it (`PlacementRounds`:
    /// one file-system sync for a round of files): the store leaves out its own fsync of the
    /// finished file then. Outside such a download it is false, and the store fsyncs.
    @TaskLocal public static var callerSyncs = false

    /// Says that the current step's network transfer is over: every byte of the download is
    /// written (not yet fsynced). Nothing happens outside a step that listens; a second call
    /// is ignored by the runner.
    public static func release() { current?.released() }
}
