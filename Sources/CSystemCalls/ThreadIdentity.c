// See CSystemCalls.h.
#define _GNU_SOURCE
#include "CSystemCalls.h"

#include <errno.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#ifdef SYS_setgroups32
#define TIDESYNC_SYS_SETGROUPS SYS_setgroups32  // 32-bit IDs where the plain call takes 16
#else
#define TIDESYNC_SYS_SETGROUPS SYS_setgroups
#endif
#ifdef SYS_getgroups32
#define TIDESYNC_SYS_GETGROUPS SYS_getgroups32
#else
#define TIDESYNC_SYS_GETGROUPS SYS_getgroups
#endif

/// The capabilities that bypass or change file permissions and ownership.
static const int file_capabilities[] = {CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER,
                                        CAP_FSETID, CAP_LINUX_IMMUTABLE, CAP_MKNOD, CAP_MAC_OVERRIDE};

static int get_capabilities(uint32_t effective[2], uint32_t permitted[2], uint32_t inheritable[2]) {
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &header, data) != 0) return errno;
    for (int i = 0; i < 2; i++) {
        effective[i] = data[i].effective;
        permitted[i] = data[i].permitted;
        inheritable[i] = data[i].inheritable;
    }
    return 0;
}

static int set_capabilities(const uint32_t effective[2], const uint32_t permitted[2], const uint32_t inheritable[2]) {
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};  // pid 0: this thread
    struct __user_cap_data_struct data[2];
    for (int i = 0; i < 2; i++) {
        data[i].effective = effective[i];
        data[i].permitted = permitted[i];
        data[i].inheritable = inheritable[i];
    }
    return syscall(SYS_capset, &header, data) == 0 ? 0 : errno;
}

int tidesync_thread_take_file_identity(uint32_t uid, uint32_t gid, tidesync_file_identity *saved) {
    memset(saved, 0, sizeof *saved);
    saved->fsuid = (uint32_t)setfsuid((uid_t)-1);  // an ID that is not valid only reads back
    saved->fsgid = (uint32_t)setfsgid((gid_t)-1);
    saved->dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
    long count = syscall(TIDESYNC_SYS_GETGROUPS, 256, saved->groups);
    if (count < 0) return errno;
    saved->group_count = (int)count;
    int code = get_capabilities(saved->effective, saved->permitted, saved->inheritable);
    if (code != 0) return code;
    gid_t groups[1] = {(gid_t)gid};
    if (syscall(TIDESYNC_SYS_SETGROUPS, 1, groups) != 0) return errno;
    setfsgid((gid_t)gid);
    if ((uint32_t)setfsgid((gid_t)-1) != gid) return EPERM;
    setfsuid((uid_t)uid);
    if ((uint32_t)setfsuid((uid_t)-1) != uid) return EPERM;
    uint32_t effective[2] = {saved->effective[0], saved->effective[1]};
    for (size_t i = 0; i < sizeof file_capabilities / sizeof file_capabilities[0]; i++) {
        effective[CAP_TO_INDEX(file_capabilities[i])] &= ~CAP_TO_MASK(file_capabilities[i]);
    }
    return set_capabilities(effective, saved->permitted, saved->inheritable);
}

int tidesync_thread_restore_file_identity(const tidesync_file_identity *saved) {
    setfsuid((uid_t)saved->fsuid);
    if ((uint32_t)setfsuid((uid_t)-1) != saved->fsuid) return EPERM;
    setfsgid((gid_t)saved->fsgid);
    if ((uint32_t)setfsgid((gid_t)-1) != saved->fsgid) return EPERM;
    gid_t groups[256];
    for (int i = 0; i < saved->group_count; i++) groups[i] = (gid_t)saved->groups[i];
    if (syscall(TIDESYNC_SYS_SETGROUPS, saved->group_count, groups) != 0) return errno;
    int code = set_capabilities(saved->effective, saved->permitted, saved->inheritable);
    if (code != 0) return code;
    if ((saved->dumpable == 0 || saved->dumpable == 1) && prctl(PR_SET_DUMPABLE, saved->dumpable, 0, 0, 0) != 0) return errno;
    return 0;
}

void tidesync_thread_file_ids(uint32_t *fsuid, uint32_t *fsgid) {
    *fsuid = (uint32_t)setfsuid((uid_t)-1);
    *fsgid = (uint32_t)setfsgid((gid_t)-1);
}
