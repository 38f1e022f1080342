/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <sys/stat.h>

#include "cgroup-confine.h"
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
                if ((streq(type, "cgroup2") || streq(type, "cgroup")) &&
                    (cgroup_path_canonical(dir, NULL, 0) < 0 || strchr(dir, '\\'))) {
                        log_warning("/proc/self/mounts: cgroup mount point '%.256s' is not a canonical "
                                    "path; ignored",
                                    dir);
                        continue;
                }
                if (streq(type, "cgroup2") && !m.v2)
                        m.v2 = strdup(dir);
                else if (streq(type, "cgroup") && has_option(opts, "cpuset") && !m.v1_cpuset)
                        m.v1_cpuset = strdup(dir);
        }
        m.host = rootdir_is_host(root);
        *ret = m;
        return 0;
}

void cgroup_location_done(CgroupLocation *l) {
        free(l->dir);
        *l = (CgroupLocation){};
}

/* One candidate directory: 1 taken, 0 not there, < 0 refused or failed. */
static int try_dir(const RootDir *root, const CgroupMounts *m, char *dir, CgroupLocation *ret, char *why,
                   size_t why_size) {
        bool v2;
        int r = cgroup_dir_confined(root, m, dir, &v2, NULL, why, why_size);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        *ret = (CgroupLocation){.dir = dir, .v2 = v2};
        return 1;
}

int cgroup_resolve_full(const RootDir *root, const CgroupMounts *m, const char *name, CgroupLocation *ret,
                        char *why, size_t why_size) {
        int r;

        if (!root || !m || !name || !ret)
                return -EINVAL;
        if (cgroup_path_confined(m, name, NULL, NULL, 0) == 0) {
                /* An absolute directory below a mount, taken as it is. */
                char *dir = strdup(name);
                if (!dir)
                        return -ENOMEM;
                r = try_dir(root, m, dir, ret, why, why_size);
                if (r <= 0)
                        free(dir);
                return r < 0 ? r : r == 0 ? -ENOENT : 0;
        }
        /* cgroup2 first: where both have the group, v2 is what systemd
         * manages; on this project's hybrid hosts only v1 has cpuset. A
         * candidate that exists and is refused ends the search: a name must
         * not slip past a symlink to the other hierarchy. */
        const char *const mounts[] = {m->v2, m->v1_cpuset};
        for (size_t i = 0; i < ELEMENTSOF(mounts); i++) {
                if (!mounts[i])
                        continue;
                char *p;
                if (asprintf(&p, "%s%s", mounts[i], streq(name, "/") ? "" : name) < 0)
                        return -ENOMEM;
                r = try_dir(root, m, p, ret, why, why_size);
                if (r <= 0)
                        free(p);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
        return -ENOENT;
}

int cgroup_resolve(const RootDir *root, const CgroupMounts *m, const char *name, CgroupLocation *ret) {
        return cgroup_resolve_full(root, m, name, ret, NULL, 0);
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
