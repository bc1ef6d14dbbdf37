// Which fanotify events writes, truncations and write-opens raise on a file marked with
// FAN_PRE_ACCESS|FAN_OPEN_PERM (Linux 6.14+, root, ext4/xfs/btrfs), and what
// /proc/PID/task/TID/syscall shows while the program waits for the answer. The results on
// 6.18 are in Sources/Replica/Hydration/AccessIntent.swift (tidesync builds on them).
// Build: cc -O2 -o write-events write-events.c; run as root: ./write-events DIR (a folder on ext4).
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PRE_ACCESS 0x00100000ULL
#define CLASS_PRE_CONTENT 0x00000008
#define INFO_RANGE 6
#define SIZE (1 << 20)

static const char *ops[] = {
    "open O_RDONLY", "open O_WRONLY", "open O_RDWR", "open O_WRONLY|O_APPEND + write 6",
    "open O_WRONLY|O_TRUNC", "open O_WRONLY|O_CREAT|O_TRUNC (sh >)", "open O_RDWR + pwrite 10 @ 8195",
    "open O_RDWR + ftruncate 512 KiB", "open O_RDWR + ftruncate 2 MiB", "truncate(path, 100)",
    "truncate(path, 0)", "open O_RDWR + fallocate(0, 0, 8192)", "open O_RDONLY + pread 100 @ 5000",
    "open O_RDWR + mmap shared write", "open O_WRONLY + write 6 @ 0",
};

static void child(int op, const char *path) {
    char buf[100] = "hello!";
    int fd = -1;
    switch (op) {
    case 0: fd = open(path, O_RDONLY); break;
    case 1: fd = open(path, O_WRONLY); break;
    case 2: fd = open(path, O_RDWR); break;
    case 3: fd = open(path, O_WRONLY | O_APPEND); if (write(fd, buf, 6) < 0) perror("write"); break;
    case 4: fd = open(path, O_WRONLY | O_TRUNC); break;
    case 5: fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644); break;
    case 6: fd = open(path, O_RDWR); if (pwrite(fd, buf, 10, 8195) < 0) perror("pwrite"); break;
    case 7: fd = open(path, O_RDWR); if (ftruncate(fd, 512 << 10) < 0) perror("ftruncate"); break;
    case 8: fd = open(path, O_RDWR); if (ftruncate(fd, 2 << 20) < 0) perror("ftruncate"); break;
    case 9: if (truncate(path, 100) < 0) perror("truncate"); break;
    case 10: if (truncate(path, 0) < 0) perror("truncate"); break;
    case 11: fd = open(path, O_RDWR); if (fallocate(fd, 0, 0, 8192) < 0) perror("fallocate"); break;
    case 12: fd = open(path, O_RDONLY); if (pread(fd, buf, 100, 5000) < 0) perror("pread"); break;
    case 13: {
        fd = open(path, O_RDWR);
        char *map = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED) { perror("mmap"); break; }
        map[100] = 'x';
        munmap(map, 8192);
        break;
    }
    case 14: fd = open(path, O_WRONLY); if (write(fd, buf, 6) < 0) perror("write"); break;
    }
    if (fd >= 0) close(fd);
    _exit(0);
}

static void syscalls(int pid) {
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", pid);
    DIR *tasks = opendir(dir);
    if (!tasks) { printf("      (no /proc entry)\n"); return; }
    struct dirent *task;
    while ((task = readdir(tasks))) {
        if (task->d_name[0] == '.') continue;
        char file[336], line[256] = "";
        snprintf(file, sizeof file, "%s/%s/syscall", dir, task->d_name);
        int fd = open(file, O_RDONLY);
        ssize_t n = fd >= 0 ? read(fd, line, sizeof line - 1) : -1;
        if (fd >= 0) close(fd);
        if (n > 0) line[n] = 0;
        char *end = line;  // the number and the first three arguments
        for (int fields = 0; *end && fields < 4; fields++) { end = strchr(end, ' '); if (!end) break; end++; }
        if (end && *end) end[-1] = 0;
        printf("      task %s syscall: %s\n", task->d_name, line);
    }
    closedir(tasks);
}

static void handle(int group, int self) {
    char buffer[4096];
    ssize_t length = read(group, buffer, sizeof buffer);
    for (struct fanotify_event_metadata *m = (void *)buffer; FAN_EVENT_OK(m, length); m = FAN_EVENT_NEXT(m, length)) {
        struct stat st;
        fstat(m->fd, &st);
        printf("    event %s pid %d", (m->mask & PRE_ACCESS) ? "FAN_PRE_ACCESS" : (m->mask & FAN_OPEN_PERM) ? "FAN_OPEN_PERM" : "other",
               m->pid);
        int found = 0;
        for (char *info = (char *)m + m->metadata_len; info < (char *)m + m->event_len;) {
            struct { uint8_t type, pad; uint16_t len; uint32_t pad2; uint64_t offset, count; } *range = (void *)info;
            if (range->type == INFO_RANGE) { printf(" range %llu+%llu", (unsigned long long)range->offset, (unsigned long long)range->count); found = 1; }
            if (!range->len) break;
            info += range->len;
        }
        if (!found && (m->mask & PRE_ACCESS)) printf(" (no range record)");
        printf(" size now %lld\n", (long long)st.st_size);
        if (m->pid != self) syscalls(m->pid);
        struct fanotify_response response = { .fd = m->fd, .response = FAN_ALLOW };
        if (write(group, &response, sizeof response) < 0) perror("answer");
        close(m->fd);
    }
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s DIR (on ext4, as root)\n", argv[0]); return 2; }
    int group = fanotify_init(CLASS_PRE_CONTENT | FAN_CLOEXEC | FAN_UNLIMITED_QUEUE | FAN_UNLIMITED_MARKS, O_RDWR | O_LARGEFILE);
    if (group < 0) { perror("fanotify_init"); return 1; }
    char path[4096];
    snprintf(path, sizeof path, "%s/probe-placeholder", argv[1]);
    for (int op = 0; op < (int)(sizeof ops / sizeof *ops); op++) {
        unlink(path);
        int fd = open(path, O_CREAT | O_RDWR, 0644);
        if (fd < 0 || ftruncate(fd, SIZE) < 0) { perror(path); return 1; }
        if (fanotify_mark(group, FAN_MARK_ADD, PRE_ACCESS | FAN_OPEN_PERM, fd, NULL) < 0) { perror("fanotify_mark"); return 1; }
        close(fd);
        printf("%s:\n", ops[op]);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) child(op, path);
        int status, done = 0;
        while (!done) {
            struct pollfd p = { .fd = group, .events = POLLIN };
            if (poll(&p, 1, 100) > 0) handle(group, getpid());
            else done = waitpid(pid, &status, WNOHANG) == pid;
            fflush(stdout);
        }
        struct stat st;
        stat(path, &st);
        printf("    after: size %lld\n", (long long)st.st_size);
        fanotify_mark(group, FAN_MARK_FLUSH, 0, AT_FDCWD, NULL);
    }
    unlink(path);
    return 0;
}
