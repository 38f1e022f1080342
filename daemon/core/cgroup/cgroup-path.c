/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <sys/stat.h>

#include "cgroup-path.h"
#include "log.h"

void cgroup_mounts_done(CgroupMounts *m) {
        free(m->v2);
        free(m->v1_cpuset);
        *m = (CgroupMounts){};
}

static bool has_option(const char *opts, const char *opt) {
        size_t n = strlen(opt);
        for (const char *p = opts; p && *p;) {
                const char *e = strchrnul(p, ',');
                if ((size_t) (e - p) == n && strncmp(p, opt, n) == 0)
                        return true;
                p = *e ? e + 1 : NULL;
        }
        return false;
}

int cgroup_mounts_read(const RootDir *root, CgroupMounts *ret) {
        _cleanup_(freep) char *text = NULL;
        CgroupMounts m = {};
        int r;

        r = rootdir_read_file(root, "/proc/self/mounts", &text, NULL);
        if (r < 0)
                return r;

        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char dev[256], dir[1024], type[64], opts[1024];
                if (sscanf(line, "%255s %1023s %63s %1023s", dev, dir, type, opts) != 4)
                        continue;
                if (streq(type, "cgroup2") && !m.v2)
                        m.v2 = strdup(dir);
                else if (streq(type, "cgroup") && has_option(opts, "cpuset") && !m.v1_cpuset)
                        m.v1_cpuset = strdup(dir);
        }
        *ret = m;
        return 0;
}

void cgroup_location_done(CgroupLocation *l) {
        free(l->dir);
        *l = (CgroupLocation){};
}

static bool is_dir(const RootDir *root, const char *path) {
        struct stat st;
        while (*path == '/')
                path++;
        return fstatat(root->fd, *path ? path : ".", &st, 0) == 0 && S_ISDIR(st.st_mode);
}

static bool path_below(const char *path, const char *mount) {
        if (!mount)
                return false;
        size_t n = strlen(mount);
        return strncmp(path, mount, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

int cgroup_resolve(const RootDir *root, const CgroupMounts *m, const char *name, CgroupLocation *ret) {
        char *dir = NULL;
        bool v2;

        if (m->v2 && path_below(name, m->v2)) {
                dir = strdup(name);
                v2 = true;
        } else if (m->v1_cpuset && path_below(name, m->v1_cpuset)) {
                dir = strdup(name);
                v2 = false;
        } else {
                /* cgroup2 first: where both have the group, v2 is what systemd
                 * manages; on this project's hybrid hosts only v1 has cpuset. */
                const char *const mounts[] = {m->v2, m->v1_cpuset};
                for (size_t i = 0; i < ELEMENTSOF(mounts) && !dir; i++) {
                        if (!mounts[i])
                                continue;
                        char *p;
                        if (asprintf(&p, "%s%s", mounts[i], streq(name, "/") ? "" : name) < 0)
                                return -ENOMEM;
                        /* The v2 mount of a hybrid host rarely has the cpuset controller: a
                         * group there without cgroup.threads is not worth steering. */
                        if (is_dir(root, p)) {
                                dir = p;
                                v2 = i == 0;
                        } else
                                free(p);
                }
                if (!dir)
                        return -ENOENT;
        }
        if (!dir)
                return -ENOMEM;
        if (!is_dir(root, dir)) {
                free(dir);
                return -ENOENT;
        }
        *ret = (CgroupLocation){.dir = dir, .v2 = v2};
        return 0;
}

int cgroup_read_attr(const RootDir *root, const char *dir, const char *name, char **ret) {
        _cleanup_(freep) char *path = NULL, *text = NULL;
        int r;

        if (asprintf(&path, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        r = rootdir_read_file(root, path, &text, NULL);
        if (r < 0)
                return r;
        size_t n = strlen(text);
        while (n > 0 && isspace((unsigned char) text[n - 1]))
                text[--n] = '\0';
        *ret = TAKE_PTR(text);
        return 0;
}

static int read_cpus(const RootDir *root, const char *dir, const char *name, CpuSet *ret) {
        _cleanup_(freep) char *text = NULL;
        int r;

        r = cgroup_read_attr(root, dir, name, &text);
        if (r < 0)
                return r;
        r = cpuset_parse(text, ret);
        if (r < 0) {
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/%s", dir, name);
                return log_parse_error(path, 1, "not a CPU list: '%.64s'", text);
        }
        return 0;
}

int cgroup_effective_cpus(const RootDir *root, const char *dir, bool v2, CpuSet *ret) {
        _cleanup_(freep) char *d = NULL;
        int r;

        if (!root || !dir || !ret)
                return -EINVAL;
        if (!v2) {
                /* Kernels before 4.x had no effective_cpus; there cpus is effective. */
                r = read_cpus(root, dir, "cpuset.effective_cpus", ret);
                if (r == -ENOENT)
                        r = read_cpus(root, dir, "cpuset.cpus", ret);
                return r;
        }
        /* A v2 cgroup whose parent does not enable the cpuset controller has
         * no cpuset files: its tasks get what the nearest ancestor with them
         * has (a scope inside a slice with AllowedCPUs= is confined by the
         * slice). The walk stops at the first directory that is no cgroup. */
        d = strdup(dir);
        if (!d)
                return -ENOMEM;
        for (;;) {
                r = read_cpus(root, d, "cpuset.cpus.effective", ret);
                if (r != -ENOENT)
                        return r;
                _cleanup_(freep) char *probe = NULL;
                if (asprintf(&probe, "%s/cgroup.controllers", d) < 0)
                        return -ENOMEM;
                if (rootdir_access(root, probe, F_OK) < 0)
                        return -ENOENT; /* left the hierarchy, or the cgroup is gone */
                char *slash = strrchr(d, '/');
                if (!slash || slash == d)
                        return -ENOENT;
                *slash = '\0';
        }
}
