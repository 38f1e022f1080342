/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "cgroup-confine.h"

_printf_(3, 4) static int refuse(char *why, size_t size, const char *fmt, ...) {
        if (why && size > 0) {
                va_list ap;
                va_start(ap, fmt);
                vsnprintf(why, size, fmt, ap);
                va_end(ap);
        }
        return CGROUP_NOT_CONFINED;
}

int cgroup_path_canonical(const char *path, char *why, size_t why_size) {
        if (!path || path[0] != '/')
                return refuse(why, why_size, "'%.256s' is not an absolute path", path ?: ""), -EINVAL;
        if (strlen(path) >= PATH_MAX)
                return refuse(why, why_size, "the path is longer than %d characters", PATH_MAX - 1), -EINVAL;
        for (const char *p = path; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        return refuse(why, why_size, "'%.256s' contains a control character", path), -EINVAL;
        if (streq(path, "/"))
                return 0;
        for (const char *p = path; *p;) {
                const char *e = strchrnul(p + 1, '/');
                size_t n = (size_t) (e - p - 1);
                if (n == 0)
                        return refuse(why, why_size, "'%.256s' is not canonical: it has an empty component",
                                      path),
                               -EINVAL;
                if ((n == 1 && p[1] == '.') || (n == 2 && p[1] == '.' && p[2] == '.'))
                        return refuse(why, why_size, "'%.256s' has a '.' or '..' component", path), -EINVAL;
                p = e;
        }
        return 0;
}

/* The length of mount if path is at or below it, else 0. */
static size_t below(const char *path, const char *mount) {
        if (!mount)
                return 0;
        size_t n = strlen(mount);
        if (n == 1 && mount[0] == '/')
                return 1; /* a cgroup file system mounted on "/" holds every path */
        return strncmp(path, mount, n) == 0 && (path[n] == '/' || path[n] == '\0') ? n : 0;
}

/* The mount that holds dir (the longest), its length in *ret_len; NULL if none. */
static const char *holding_mount(const CgroupMounts *m, const char *dir, bool *ret_v2, size_t *ret_len) {
        size_t a = below(dir, m->v2), b = below(dir, m->v1_cpuset);
        if (a == 0 && b == 0)
                return NULL;
        *ret_v2 = a >= b;
        *ret_len = a >= b ? a : b;
        return a >= b ? m->v2 : m->v1_cpuset;
}

int cgroup_path_confined(const CgroupMounts *m, const char *dir, bool *ret_v2, char *why, size_t why_size) {
        size_t len;
        bool v2;

        if (cgroup_path_canonical(dir, why, why_size) < 0)
                return CGROUP_NOT_CONFINED;
        if (!m || !holding_mount(m, dir, &v2, &len)) {
                char list[2 * PATH_MAX];
                snprintf(list, sizeof(list), "%s%s%s", m && m->v2 ? m->v2 : "",
                         m && m->v2 && m->v1_cpuset ? ", " : "", m && m->v1_cpuset ? m->v1_cpuset : "");
                return refuse(why, why_size, "%.256s is outside the cgroup mounts (%s)", dir,
                              list[0] ? list : "none found");
        }
        if (ret_v2)
                *ret_v2 = v2;
        return 0;
}

/* One step of the walk: the component [p, e) of dir below fd, neither a
 * symbolic link nor anything but a directory. */
static int step(int fd, const char *dir, const char *p, const char *e, struct stat *st, char *why,
                size_t why_size) {
        char comp[NAME_MAX + 1];
        size_t n = (size_t) (e - p), upto = (size_t) (e - dir);

        if (n > NAME_MAX)
                return refuse(why, why_size, "%.256s: a component is longer than %d characters", dir,
                              NAME_MAX);
        memcpy(comp, p, n);
        comp[n] = '\0';
        int next = openat(fd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) {
                int r = negative_errno();
                if (r == -ENOENT)
                        refuse(why, why_size, "%.*s does not exist", (int) upto, dir);
                if (r == -ENOTDIR)
                        return refuse(why, why_size, "%.*s is not a directory", (int) upto, dir);
                return r;
        }
        if (fstat(next, st) < 0) {
                int r = negative_errno();
                close(next);
                return r;
        }
        if (S_ISLNK(st->st_mode) || !S_ISDIR(st->st_mode)) {
                close(next);
                return refuse(why, why_size, "%.*s is %s", (int) upto, dir,
                              S_ISLNK(st->st_mode) ? "a symbolic link" : "not a directory");
        }
        return next;
}

/* Rule 4: the directory is on the cgroup file system of its hierarchy. */
static int check_fs(int fd, const char *dir, bool v2, char *why, size_t why_size) {
        struct statfs sf;

        if (fstatfs(fd, &sf) < 0)
                return negative_errno();
        if ((unsigned long) sf.f_type != (unsigned long) (v2 ? CGROUP2_SUPER_MAGIC : CGROUP_SUPER_MAGIC))
                return refuse(why, why_size, "%.256s is not on a %s file system (f_type 0x%lx)", dir,
                              v2 ? "cgroup2" : "cgroup", (unsigned long) sf.f_type);
        return 0;
}

int cgroup_dir_confined(const RootDir *root, const CgroupMounts *m, const char *dir, bool *ret_v2,
                        int *ret_fd, char *why, size_t why_size) {
        size_t mount_len = 0;
        dev_t dev = 0;
        bool v2;
        int r;

        if (!root || !m || !dir)
                return -EINVAL;
        r = cgroup_path_confined(m, dir, &v2, why, why_size);
        if (r < 0)
                return r;
        (void) holding_mount(m, dir, &v2, &mount_len);

        _cleanup_(closep) int fd = fcntl(root->fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return negative_errno();
        if (mount_len == 1) { /* mounted on "/": the root's own device throughout */
                struct stat st;
                if (fstat(fd, &st) < 0)
                        return negative_errno();
                dev = st.st_dev;
        }
        for (const char *p = dir + 1; *p;) {
                const char *e = strchrnul(p, '/');
                struct stat st;
                int next = step(fd, dir, p, e, &st, why, why_size);
                if (next < 0)
                        return next;
                close(fd);
                fd = next;
                size_t upto = (size_t) (e - dir);
                if (upto <= mount_len)
                        dev = st.st_dev; /* up to the mount point: the device it shows */
                else if (st.st_dev != dev)
                        return refuse(why, why_size,
                                      "%.*s is another file system mounted into the cgroup tree (a bind "
                                      "mount?)",
                                      (int) upto, dir);
                p = *e ? e + 1 : e;
        }
        if (m->host && (r = check_fs(fd, dir, v2, why, why_size)) < 0)
                return r;
        if (ret_v2)
                *ret_v2 = v2;
        if (ret_fd)
                *ret_fd = TAKE_FD(fd);
        return 0;
}
