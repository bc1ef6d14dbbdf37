import Glibc

/// `posix_spawn` of a child that starts clean: default signal dispositions and an empty
/// signal mask (the parent blocks or ignores signals for its own handlers, and a child
/// would inherit that: an Apache started so never saw its SIGUSR1, a password command
/// ignored SIGTERM), and no descriptor of the parent above `keeping` (a descriptor opened
/// without O_CLOEXEC — `Data.write`, `FileHandle` — would otherwise stay open in the child
/// for its whole life).
public enum CleanSpawn {
    /// Why a child could not be started.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    // glibc ≥ 2.34 has it, but its header hides it from Swift's Glibc module.
    private static let closeFrom: CloseFrom? = Symbol.lookUp("posix_spawn_file_actions_addclosefrom_np")

    /// Starts `executable` (looked up in PATH when `searchPath` and it has no slash) with
    /// `arguments` (the first is the child's argv[0]) and `environment` ("NAME=value"),
    /// after `actions` and a close of every descriptor from `keeping` up; its pid.
    public static func spawn(_ executable: String, arguments: [String], environment: [String],
                             actions: inout posix_spawn_file_actions_t, keeping: Int32 = 3,
                             searchPath: Bool = false) throws(Failure) -> pid_t {
        guard let closeFrom else {
            throw Failure(description: "this C library has no posix_spawn_file_actions_addclosefrom_np (glibc 2.34 or later is needed)")
        }
        guard closeFrom(&actions, keeping) == 0 else {
            throw Failure(description: "posix_spawn_file_actions_addclosefrom_np failed")
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = searchPath ? posix_spawnp(&pid, executable, &actions, &attributes, argv, envp)
            : posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard spawned == 0 else {
            throw Failure(description: "cannot start \(executable): \(String(cString: strerror(spawned)))")
        }
        return pid
    }
}
