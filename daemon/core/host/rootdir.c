/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "rootdir.h"

int rootdir_open(const char *path, RootDir **ret) {
        _cleanup_(rootdir_freep) RootDir *r = NULL;

        if (!path || !*path || !ret)
                return -EINVAL;

        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->fd = -EBADF;
        r->path = strdup(path);
        if (!r->path)
                return -ENOMEM;
        r->fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (r->fd < 0)
                return negative_errno();

        *ret = TAKE_PTR(r);
        return 0;
}

RootDir *rootdir_free(RootDir *r) {
        if (!r)
                return NULL;
        if (r->fd >= 0)
                close(r->fd);
        free(r->path);
        free(r);
        return NULL;
}

static const char *relative(const char *path) {
        while (*path == '/')
                path++;
        return *path ? path : ".";
}

int rootdir_open_file(const RootDir *r, const char *path, int flags, int *ret_fd) {
        if (!r || !path || !ret_fd)
                return -EINVAL;
        if (r->trace)
                r->trace(path, r->trace_userdata);
        int fd = openat(r->fd, relative(path), flags | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        *ret_fd = fd;
        return 0;
}

int read_full_fd(int fd, char **ret, size_t *ret_size) {
        _cleanup_(freep) char *buf = NULL;
        size_t size = 0, alloc = 0;

        for (;;) {
                if (alloc - size < 2048) {
                        size_t n = alloc ? alloc * 2 : 4096;
                        char *b = realloc(buf, n);
                        if (!b)
                                return -ENOMEM;
                        buf = b;
                        alloc = n;
                }
                ssize_t k = read(fd, buf + size, alloc - size - 1);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                size += (size_t) k;
        }
        if (!buf) {
                buf = malloc(1);
                if (!buf)
                        return -ENOMEM;
        }
        buf[size] = '\0';
        *ret = TAKE_PTR(buf);
        if (ret_size)
                *ret_size = size;
        return 0;
}

int rootdir_read_file(const RootDir *r, const char *path, char **ret, size_t *ret_size) {
        _cleanup_(closep) int fd = -EBADF;
        int k;

        k = rootdir_open_file(r, path, O_RDONLY, &fd);
        if (k < 0)
                return k;
        return read_full_fd(fd, ret, ret_size);
}

int rootdir_opendir(const RootDir *r, const char *path, DIR **ret) {
        int fd = -EBADF, k;

        k = rootdir_open_file(r, path, O_RDONLY | O_DIRECTORY, &fd);
        if (k < 0)
                return k;
        DIR *d = fdopendir(fd);
        if (!d) {
                k = negative_errno();
                close(fd);
                return k;
        }
        *ret = d;
        return 0;
}

int rootdir_access(const RootDir *r, const char *path, int mode) {
        if (!r || !path)
                return -EINVAL;
        if (faccessat(r->fd, relative(path), mode, 0) < 0)
                return negative_errno();
        return 0;
}

int rootdir_display_path(const RootDir *r, const char *path, char **ret) {
        char *s;
        bool is_slash = streq(r->path, "/");

        if (asprintf(&s, "%s%s%s", is_slash ? "" : r->path, (!is_slash && path[0] != '/') ? "/" : "", path) <
            0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

bool rootdir_is_host(const RootDir *r) {
        struct stat a, b;
        if (fstat(r->fd, &a) < 0 || stat("/", &b) < 0)
                return false;
        return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}
