/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "affinity-table.h"
#include "cgroup-path.h"
#include "proc-thread.h"

struct AffinityTable {
        const RootDir *root;
        CgroupMounts mounts;
        FILE *log;
};

int affinity_table_open(const RootDir *root, const char *path, AffinityTable **ret) {
        _cleanup_(affinity_table_freep) AffinityTable *t = NULL;
        int r;

        if (!root || !path || !ret)
                return -EINVAL;
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->root = root;
        r = cgroup_mounts_read(root, &t->mounts);
        if (r < 0)
                return r;
        t->log = fopen(path, "ae");
        if (!t->log)
                return negative_errno();
        *ret = TAKE_PTR(t);
        return 0;
}

AffinityTable *affinity_table_free(AffinityTable *t) {
        if (!t)
                return NULL;
        cgroup_mounts_done(&t->mounts);
        if (t->log)
                fclose(t->log);
        free(t);
        return NULL;
}

static int read_status(const AffinityTable *t, pid_t tid, char **ret) {
        char path[96];
        int r;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int) tid, (int) tid);
        r = rootdir_read_file(t->root, path, ret, NULL);
        return r == -ENOENT ? -ESRCH : r;
}

int affinity_table_get(const AffinityTable *t, pid_t tid, CpuSet *ret) {
        _cleanup_(freep) char *status = NULL;
        int r;

        if (!t || tid <= 0 || !ret)
                return -EINVAL;
        r = read_status(t, tid, &status);
        if (r < 0)
                return r;
        r = thread_status_parse_cpus_allowed(status, "status", ret, NULL);
        return r < 0 ? -ESRCH : 0;
}

/* The CPUs of the thread's cgroup, as the kernel composes with them. */
static int thread_cgroup_cpus(const AffinityTable *t, pid_t tid, CpuSet *ret) {
        _cleanup_(freep) char *rel = NULL;
        char path[PATH_MAX];
        const char *mount = t->mounts.v1_cpuset ?: t->mounts.v2;
        int r;

        if (!mount)
                return -ENOENT;
        snprintf(path, sizeof(path), "/proc/%d/cpuset", (int) tid);
        r = rootdir_read_file(t->root, path, &rel, NULL);
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        rel[strcspn(rel, "\n")] = 0;
        if (rel[0] != '/' || strstr(rel, ".."))
                return -EBADMSG;
        static const char *const names[] = {"cpuset.effective_cpus", "cpuset.cpus.effective", "cpuset.cpus"};
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_(freep) char *text = NULL;
                snprintf(path, sizeof(path), "%s%s/%s", mount, streq(rel, "/") ? "" : rel, names[i]);
                r = rootdir_read_file(t->root, path, &text, NULL);
                if (r == -ENOENT)
                        continue;
                if (r < 0)
                        return r;
                text[strcspn(text, "\n")] = 0;
                if (*text)
                        return cpuset_parse(text, ret);
        }
        return -ENOENT;
}

/* status with its Cpus_allowed_list line replaced, in place, as the
 * simulated host writes it (and as the kernel changes /proc): a reader that
 * keeps the file open (steerd --keep-open) sees the new mask. A shorter
 * text is padded with blanks after its last line, so that no tail of the
 * old one is left. */
static int write_status(const AffinityTable *t, pid_t tid, const char *status, const char *list) {
        _cleanup_(freep) char *out = NULL;
        _cleanup_(closep) int fd = -EBADF;
        char path[96];
        const char *line = strstr(status, "Cpus_allowed_list:");
        const char *end;
        struct stat st;
        int n;

        if (!line)
                return -EBADMSG;
        end = strchrnul(line, '\n');
        snprintf(path, sizeof(path), "proc/%d/task/%d/status", (int) tid, (int) tid);
        fd = openat(t->root->fd, path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        /* Without the padding of an earlier write: it would grow at each. */
        size_t end_len = strlen(end);
        while (end_len > 0 && end[end_len - 1] == ' ')
                end_len--;
        n = asprintf(&out, "%.*sCpus_allowed_list:\t%s%.*s", (int) (line - status), status, list, (int) end_len,
                     end);
        if (n < 0)
                return -ENOMEM;
        if (st.st_size > n) {
                char *padded = realloc(out, (size_t) st.st_size);
                if (!padded)
                        return -ENOMEM;
                memset(padded + n, ' ', (size_t) (st.st_size - n));
                out = padded;
                n = (int) st.st_size;
        }
        if (pwrite(fd, out, n, 0) != n)
                return errno ? negative_errno() : -EIO;
        return 0;
}

int affinity_table_set(AffinityTable *t, pid_t tid, hwloc_const_bitmap_t set) {
        _cleanup_(freep) char *status = NULL, *list = NULL, *req = NULL;
        _cleanup_cpuset_ CpuSet cg = NULL, got = NULL;
        int r;

        if (!t || tid <= 0 || (set && hwloc_bitmap_iszero(set)))
                return -EINVAL;
        r = read_status(t, tid, &status);
        if (r < 0)
                return r;
        r = thread_cgroup_cpus(t, tid, &cg);
        if (r < 0)
                return r == -ESRCH ? r : -EIO;
        if (set) {
                got = hwloc_bitmap_alloc();
                if (!got)
                        return -ENOMEM;
                hwloc_bitmap_and(got, set, cg);
                if (hwloc_bitmap_iszero(got))
                        return -EINVAL;
        } else
                got = TAKE_PTR(cg);
        r = cpuset_format(got, &list);
        if (r < 0)
                return r;
        if (set && (r = cpuset_format(set, &req)) < 0)
                return r;
        r = write_status(t, tid, status, list);
        if (r < 0)
                return r;
        fprintf(t->log, "%d %s\n", (int) tid, req ?: "all");
        fflush(t->log);
        return 0;
}
