// See CSystemCalls.h.
#define _GNU_SOURCE
#include "CSystemCalls.h"

#include <errno.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

int tidesync_thread_take_file_identity(uint32_t uid, uint32_t gid) {
    gid_t groups[1] = {(gid_t)gid};
    if (syscall(SYS_setgroups, 1, groups) != 0) return errno;
    // setfsuid and setfsgid report no error; an ID that is not valid (-1) only reads back
    // the current one, which tells whether the change took.
    setfsgid((gid_t)gid);
    if ((uint32_t)setfsgid((gid_t)-1) != gid) return EPERM;
    setfsuid((uid_t)uid);
    if ((uint32_t)setfsuid((uid_t)-1) != uid) return EPERM;
    return 0;
}
