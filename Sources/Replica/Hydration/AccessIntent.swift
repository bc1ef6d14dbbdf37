// What the program behind a placeholder's fanotify event is about to do (issue 15 item 6).
// Linux 6.18 has no pre-modify event: a write raises the same FAN_PRE_ACCESS as a read, for
// the written range only. Measured on 6.18.44, ext4, with packaging/probes/write-events.c
// (a file marked FAN_PRE_ACCESS|FAN_OPEN_PERM; "syscall" is /proc/PID/task/TID/syscall while
// the program waits for the answer):
//
//   open O_RDONLY / O_WRONLY / O_RDWR      FAN_OPEN_PERM only; syscall 257 (openat), flags 0 / 1 / 2
//   open O_WRONLY|O_APPEND, write 6 B      FAN_OPEN_PERM (flags 0x401), then FAN_PRE_ACCESS 0+4096:
//                                          the range of an append is at offset 0, not at the end
//   open O_TRUNC (also sh's `>`, 0x241)    FAN_OPEN_PERM only, with the old size: no event for the
//                                          truncation itself
//   pwrite 10 @ 8195                       FAN_PRE_ACCESS 8192+4096, syscall 18 (pwrite64)
//   ftruncate 512 KiB / 2 MiB              FAN_PRE_ACCESS 524288+0 / 2097152+0, syscall 77 (fd, length)
//   truncate(path, 100) / (path, 0)        FAN_PRE_ACCESS 0+4096 / 0+0, no open event, syscall 76
//   fallocate(0, 0, 8192)                  FAN_PRE_ACCESS 0+8192, syscall 285
//   mmap shared writable, then a store     FAN_PRE_ACCESS 0+8192 at mmap (syscall 9); the store none
//
// So a write only asks for the pages it touches, and what the program does can only be told
// from the syscall it waits in: the kernel holds the program there until the event is
// answered, and root may read that file (the daemon must be root for pre-content events).
// An open for writing (O_WRONLY/O_RDWR without O_TRUNC), a write, a truncation to a nonzero
// size or an allocation hydrates the whole file before it goes on; an open with O_TRUNC or
// an ftruncate to 0 throws the old bytes away and fetches nothing. When the syscall cannot be
// read (the program is gone, another architecture), an open counts as a read (its writes
// raise events of their own) and an access as a write: at worst a whole file is fetched,
// never a write let into a file with holes.
import Glibc

/// What the access behind an event does to the file's old bytes.
public enum AccessIntent: Equatable, Sendable {
    /// Reads them (an open for reading, read, mmap, exec, the source of a copy).
    case reading
    /// Keeps them and changes some (an open for writing, write, a truncation to a size
    /// other than 0, fallocate, the destination of a copy).
    case writing
    /// Throws them all away (an open with O_TRUNC, ftruncate to 0): nothing to fetch.
    case emptying
    /// The syscall could not be read or is none of these.
    case unknown

    /// What process `pid`, waiting on an event of the file `file`, does: `opening` for an
    /// open event. Every thread is looked at; only the ones whose syscall names this file
    /// (by descriptor) or an open count, and writing wins over reading, reading over emptying.
    ///
    /// A thread that has queued its event but is not asleep yet reads as "running", with no
    /// syscall: when nothing was found and a thread was running, it is looked at again, up
    /// to 50 times 1 ms apart (under load, a reader of one page was taken for `unknown`
    /// and the whole file was fetched: HydratorTests.twoReadersOfOneRangeShareOneFetch).
    static func of(pid: Int32, file: FileIdentity, opening: Bool) -> AccessIntent {
        for _ in 0..<50 {
            guard let tasks = Self.threads(of: pid) else { return .unknown }
            var seen: Set<AccessIntent> = []
            var running = false
            for task in tasks {
                let call: Syscall
                switch Syscall.read("/proc/\(pid)/task/\(task)/syscall") {
                case .waiting(let waiting): call = waiting
                case .running: running = true; continue
                case .none: continue
                }
                let intent = opening ? call.openIntent : call.accessIntent(pid: pid, file: file)
                if let intent { seen.insert(intent) }
            }
            for intent in [AccessIntent.writing, .reading, .emptying] where seen.contains(intent) { return intent }
            guard running else { return .unknown }
            usleep(1000)
        }
        return .unknown
    }

    /// The thread ids of process `pid` (its /proc task folder, read without Foundation: this
    /// runs for every event, about 8 000 for a 1 GiB `cat`), or nil when it is gone.
    static func threads(of pid: Int32) -> [Int32]? {
        guard let folder = opendir("/proc/\(pid)/task") else { return nil }
        defer { closedir(folder) }
        var threads: [Int32] = []
        while let entry = readdir(folder) {
            let id = withUnsafeBytes(of: entry.pointee.d_name) { name in
                name.prefix { $0 != 0 }.reduce(Int32(0)) { value, digit in
                    (48...57).contains(digit) && value >= 0 ? value &* 10 &+ Int32(digit - 48) : -1
                }
            }
            if id > 0 { threads.append(id) }
        }
        return threads
    }
}

/// A syscall a task waits in, with its six arguments, as `/proc/PID/task/TID/syscall` shows it.
struct Syscall {
    var number: Int
    var arguments: [UInt64]

    /// What `/proc/PID/task/TID/syscall` says of a task.
    enum Reading {
        /// It waits in this syscall.
        case waiting(Syscall)
        /// It is running: in no wait, or not asleep yet.
        case running
        /// The file cannot be read, or names no syscall.
        case none
    }

    static func read(_ path: String) -> Reading {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .none }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return .none }
        let line = String(decoding: buffer[0..<count], as: UTF8.self)
        if line.hasPrefix("running") { return .running }
        return Syscall(line: line).map(Reading.waiting) ?? .none
    }

    /// "NR ARG1 … ARG6 SP PC" in hex ("running" or "-1 SP PC" when in no syscall).
    init?(line: String) {
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard fields.count >= 7, let number = Int(fields[0]), number >= 0 else { return nil }
        let arguments = fields[1...6].compactMap { UInt64($0.dropFirst(2), radix: 16) }
        guard arguments.count == 6 else { return nil }
        self.number = number
        self.arguments = arguments
    }

    /// For an open event: what an open syscall's flags say; nil for any other syscall.
    var openIntent: AccessIntent? {
        let flags: UInt64
        switch number {
        case Numbers.open: flags = arguments[1]
        case Numbers.openat, Numbers.openByHandleAt: flags = arguments[2]
        case Numbers.creat: return .emptying
        case Numbers.execve, Numbers.execveat: return .reading
        default: return nil  // openat2 keeps its flags in memory: an open counts as a read
        }
        if flags & UInt64(O_TRUNC) != 0 { return .emptying }
        return flags & UInt64(O_ACCMODE) == UInt64(O_RDONLY) ? .reading : .writing
    }

    /// For an access event: what this syscall does to the file open as one of its
    /// descriptors (or named by path, for truncate); nil when it is not about this file.
    func accessIntent(pid: Int32, file: FileIdentity) -> AccessIntent? {
        func names(_ index: Int) -> Bool { Self.descriptor(arguments[index], of: pid, is: file) }
        switch number {
        case _ where Numbers.reads.contains(number): return names(0) ? .reading : nil
        case _ where Numbers.writes.contains(number): return names(0) ? .writing : nil
        case Numbers.ftruncate: return names(0) ? (arguments[1] == 0 ? .emptying : .writing) : nil
        case Numbers.truncate: return .writing  // by path: taken for this file, which costs a fetch at worst
        case Numbers.mmap:
            guard names(4) else { return nil }
            let shared = arguments[3] & UInt64(MAP_SHARED) != 0, writable = arguments[2] & UInt64(PROT_WRITE) != 0
            return shared && writable ? .writing : .reading
        case Numbers.sendfile: return names(1) ? .reading : names(0) ? .writing : nil
        case Numbers.splice, Numbers.copyFileRange: return names(0) ? .reading : names(2) ? .writing : nil
        case Numbers.execve, Numbers.execveat: return .reading
        default: return nil
        }
    }

    /// True when descriptor `value` of process `pid` is the file `file` (stat of its
    /// /proc link, which opens nothing and raises no event).
    static func descriptor(_ value: UInt64, of pid: Int32, is file: FileIdentity) -> Bool {
        guard value < 1 << 31 else { return false }
        var info = stat()
        guard stat("/proc/\(pid)/fd/\(value)", &info) == 0 else { return false }
        return UInt64(info.st_dev) == file.device && UInt64(info.st_ino) == file.inode
    }

    /// The syscall numbers of this architecture (-1: none such): open, openat, creat,
    /// open_by_handle_at, execve, execveat, ftruncate, truncate, mmap, sendfile, splice,
    /// copy_file_range.
    enum Numbers {
        #if arch(x86_64)
        static let table = [2, 257, 85, 304, 59, 322, 77, 76, 9, 40, 275, 326]
        static let reads: Set = [0, 17, 19, 295, 327]  // read, pread64, readv, preadv, preadv2
        static let writes: Set = [1, 18, 20, 296, 328, 285]  // write, pwrite64, writev, pwritev, pwritev2, fallocate
        #elseif arch(arm64)
        static let table = [-1, 56, -1, 265, 221, 281, 46, 45, 222, 71, 76, 285]
        static let reads: Set = [63, 67, 65, 69, 286]
        static let writes: Set = [64, 68, 66, 70, 287, 47]
        #else
        static let table = [Int](repeating: -1, count: 12)
        static let reads: Set<Int> = []
        static let writes: Set<Int> = []
        #endif
        static let open = table[0], openat = table[1], creat = table[2], openByHandleAt = table[3]
        static let execve = table[4], execveat = table[5], ftruncate = table[6], truncate = table[7]
        static let mmap = table[8], sendfile = table[9], splice = table[10], copyFileRange = table[11]
    }
}
