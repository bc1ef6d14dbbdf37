#define _GNU_SOURCE
#include "CSystemCalls.h"

#include <errno.h>
#include <sys/vfs.h>
#include <unistd.h>

int tidesync_syncfs(int fd) {
    return syncfs(fd) == 0 ? 0 : errno;
}

int64_t tidesync_filesystem_type(int fd) {
    struct statfs fs;
    return fstatfs(fd, &fs) == 0 ? (int64_t)fs.f_type : -1;
}
