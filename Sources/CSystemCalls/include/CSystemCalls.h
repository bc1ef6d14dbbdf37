// What the SystemCalls module cannot call from Swift: the raw system calls that change one
// thread's credentials (glibc's own setgroups() and set*id() change every thread), the
// <sys/fsuid.h> functions and capget/capset, syncfs and fstatfs, which Swift's Glibc module
// does not import.
#ifndef TIDESYNC_C_SYSTEM_CALLS_H
#define TIDESYNC_C_SYSTEM_CALLS_H

#include <stddef.h>
#include <stdint.h>

/// A thread's file-system identity as it was before `tidesync_thread_take_file_identity`.
typedef struct {
    uint32_t fsuid;
    uint32_t fsgid;
    /// The thread's supplementary groups (at most 256; more is refused).
    uint32_t groups[256];
    int group_count;
    /// The thread's effective, permitted and inheritable capability sets (two 32-bit words
    /// each, capability version 3).
    uint32_t effective[2];
    uint32_t permitted[2];
    uint32_t inheritable[2];
    /// The process's dumpable flag, which a change of file-system user clears.
    int dumpable;
} tidesync_file_identity;

/// Makes the calling thread, and only it, open, create and remove files as user `uid` of
/// group `gid` (no supplementary groups): its file-system user and group IDs and its group
/// list change, so permission checks and new files' owners are that user's, and the
/// thread's file capabilities (CAP_DAC_OVERRIDE, CAP_CHOWN, CAP_FOWNER...) are dropped from
/// its effective set (the kernel does that when the file-system user leaves root, unless
/// SECBIT_NO_SETUID_FIXUP is set, so it is done here explicitly too). What the thread was is
/// saved in `saved` first. Needs CAP_SETUID and CAP_SETGID. Returns 0, or the errno that
/// stopped it; on an error the thread's identity is put back as far as it can be, and
/// `tidesync_thread_restore_file_identity` must still be called.
///
/// While the thread acts as the user it must not start threads, log through anything that
/// may start one, or hand work to other threads: a new thread inherits its creator's
/// credentials. A glibc set*id() or setgroups() call anywhere in the process while the
/// thread acts as the user resets it to the process's identity.
int tidesync_thread_take_file_identity(uint32_t uid, uint32_t gid, tidesync_file_identity *saved);

/// Puts the calling thread's file-system identity, group list and capabilities back as
/// `saved` holds them, and the process's dumpable flag. Returns 0, or the errno of the step
/// that failed (the thread must then not be used again).
int tidesync_thread_restore_file_identity(const tidesync_file_identity *saved);

/// The calling thread's file-system user and group IDs, as the kernel reports them.
void tidesync_thread_file_ids(uint32_t *fsuid, uint32_t *fsgid);

/// syncfs(2), a _GNU_SOURCE call: writes back every dirty page and inode of the file
/// system holding `fd` and commits its journal. Returns 0, or the errno; a write-back error
/// anywhere on that file system since `fd` was opened is reported once to `fd` (Linux 5.8
/// and later).
int tidesync_syncfs(int fd);

/// The type (`f_type`, a magic number: 0xEF53 for ext2/3/4) of the file system holding
/// `fd`, from fstatfs(2); -1 when it fails.
int64_t tidesync_filesystem_type(int fd);

#endif
