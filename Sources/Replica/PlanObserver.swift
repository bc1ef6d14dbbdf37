import SyncEngine

/// Watches a `PlanRunner` carry a plan out, for `tidesync status`. Every call is made from
/// the runner's tasks, possibly from several threads at once: an observer guards its own
/// state and returns quickly (no I/O).
public protocol PlanObserver: Sendable {
    /// A plan is about to run: its steps, in plan order (their indices are used below).
    func planStarted(_ steps: [PlannedStep])
    /// Step `index` starts.
    func stepStarted(_ index: Int)
    /// Step `index`, a transfer, has moved `bytesDone` of `bytesTotal` bytes.
    func transferProgressed(step index: Int, bytesDone: Int64, bytesTotal: Int64?)
    /// Step `index` handed its transfer slot back: its bytes have moved, and it goes on
    /// making them durable and recording them (a download; see `TransferSlot`).
    func stepReleased(_ index: Int)
    /// Step `index` ended; `succeeded` is false when it failed.
    func stepEnded(_ index: Int, succeeded: Bool)
    /// The plan is over; steps that never started were dropped.
    func planEnded()
    /// While true, the runner starts no new step (running ones finish): the domain is paused.
    var holdsNewSteps: Bool { get }
}

extension PlanObserver {
    /// Nothing, by default.
    public func stepReleased(_ index: Int) {}
}

/// One step of a plan as `tidesync status` shows it.
public struct PlannedStep: Sendable, Equatable {
    /// Which way bytes move.
    public enum Direction: String, Sendable {
        case upload, download
    }

    /// The item the step is about.
    public var path: RemotePath
    /// The step's kind, as in the log and the journal: "upload", "delete-local", …
    public var step: String
    /// Set for steps that move file contents.
    public var direction: Direction?
    /// The bytes the step moves, when known before it starts.
    public var bytes: Int64?

    public init(path: RemotePath, step: String, direction: Direction? = nil, bytes: Int64? = nil) {
        self.path = path
        self.step = step
        self.direction = direction
        self.bytes = bytes
    }
}

extension PlannedStep {
    /// `action` as status shows it, with the remote sizes the plan was made from.
    init(_ action: SyncAction, remote: [RemotePath: RemoteEntry]) {
        switch action {
        case .upload(let path, _, let source, _):
            self.init(path: path, step: action.stepName, direction: .upload, bytes: source.size)
        case .download(let path, _, _, _), .compareContents(let path, _, _, _, _):
            self.init(path: path, step: action.stepName, direction: .download, bytes: remote[path]?.size)
        case .conflictCopy(let conflict):
            self.init(path: conflict.copy, step: action.stepName,
                      direction: conflict.kind == .file ? .upload : nil, bytes: conflict.local.size)
        default:
            self.init(path: action.path, step: action.stepName)
        }
    }
}
