// What the SystemCalls module cannot call from Swift: a variadic `syscall` and the
// <sys/fsuid.h> functions, which Swift's Glibc module does not import.
#ifndef TIDESYNC_C_SYSTEM_CALLS_H
#define TIDESYNC_C_SYSTEM_CALLS_H

#include <stdint.h>

/// Makes the calling thread, and only it, open, create and remove files as user `uid` of
/// group `gid` (no supplementary groups): its file-system user and group IDs and its group
/// list change, so permission checks and new files' owners are that user's, and the kernel
/// drops the thread's file capabilities (CAP_DAC_OVERRIDE, CAP_CHOWN, CAP_FOWNER...) while
/// its file-system user is not root. The process's other threads keep their identity:
/// glibc's own setgroups() would change every thread, so the group list is set by the raw
/// system call. Needs CAP_SETUID and CAP_SETGID. Returns 0, or the errno that stopped it
/// (the thread's identity is then unknown: do not use the thread for anything else).
int tidesync_thread_take_file_identity(uint32_t uid, uint32_t gid);

#endif
