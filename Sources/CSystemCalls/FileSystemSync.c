#define _GNU_SOURCE
#include "CSystemCalls.h"

#include <errno.h>
#include <unistd.h>

int tidesync_syncfs(int fd) {
    return syncfs(fd) == 0 ? 0 : errno;
}
