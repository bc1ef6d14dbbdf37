@testable import Replica
import Testing

/// How an event's access is told from the syscall its program waits in: the lines are the
/// ones `packaging/probes/write-events.c` read on Linux 6.18 (x86-64), and what each asks of
/// the hydrator (issue 15 item 6).
@Suite struct AccessIntentTests {
    static func open(_ flags: String) -> AccessIntent? {
        Syscall(line: "257 0xffffff9c 0x7ffe7bcd5460 \(flags) 0x1b6 0x0 0x0 0x7ffe7bcd5400 0x7f0c1d2e3f4e\n")?.openIntent
    }

    #if arch(x86_64)
    @Test func opensAreToldByTheirFlags() {
        #expect(Self.open("0x0") == .reading)
        #expect(Self.open("0x1") == .writing)
        #expect(Self.open("0x2") == .writing)
        #expect(Self.open("0x401") == .writing)  // O_WRONLY|O_APPEND: `>>`
        #expect(Self.open("0x201") == .emptying)  // O_WRONLY|O_TRUNC
        #expect(Self.open("0x241") == .emptying)  // sh's `>`
        #expect(Syscall(line: "1 0x4 0x7ffe7bcd6460 0x6 0x0 0x0 0x0 0x7ffe 0x7f0c")?.openIntent == nil, "a write is no open")
    }
    #endif

    @Test func linesOfNoSyscallAreNone() {
        #expect(Syscall(line: "running\n") == nil)
        #expect(Syscall(line: "-1 0x7ffe7bcd5400 0x7f0c1d2e3f4e\n") == nil)
        #expect(Syscall(line: "") == nil)
    }

    /// A write, an open for writing and an unknown access need the whole file; a file being
    /// emptied needs nothing; an open for reading needs it only for a program that skips holes.
    @Test func whatEachAccessFetches() {
        #expect(Hydrator.needsWholeFile(.writing, opening: true, skipsHoles: false) == true)
        #expect(Hydrator.needsWholeFile(.writing, opening: false, skipsHoles: false) == true)
        #expect(Hydrator.needsWholeFile(.emptying, opening: true, skipsHoles: true) == nil)
        #expect(Hydrator.needsWholeFile(.emptying, opening: false, skipsHoles: false) == nil)
        #expect(Hydrator.needsWholeFile(.reading, opening: true, skipsHoles: false) == nil)
        #expect(Hydrator.needsWholeFile(.reading, opening: true, skipsHoles: true) == true)
        #expect(Hydrator.needsWholeFile(.reading, opening: false, skipsHoles: true) == false)
        #expect(Hydrator.needsWholeFile(.unknown, opening: true, skipsHoles: false) == nil)
        #expect(Hydrator.needsWholeFile(.unknown, opening: false, skipsHoles: false) == true)
    }
}
