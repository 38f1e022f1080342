/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <fcntl.h>
#include <libcgroup.h>

#include "actuator-cgroup.h"
#include "actuator-systemd.h"
#include "cgroup-confine.h"
#include "log.h"

static int parent_dir(const char *dir, char **ret) {
        char *p = strdup(dir), *slash;

        if (!p)
                return -ENOMEM;
        slash = strrchr(p, '/');
        if (!slash || slash == p) {
                free(p);
                return -ENOENT; /* a mount point's parent is no cgroup */
        }
        *slash = '\0';
        *ret = p;
        return 0;
}

int act_cgroup_parent_effective(const RootDir *root, const char *dir, bool v2, CpuSet *ret) {
        _cleanup_(freep) char *parent = NULL;
        int r;

        r = parent_dir(dir, &parent);
        if (r < 0)
                return r;
        return cgroup_effective_cpus(root, parent, v2, ret);
}

int act_cgroup_read_cpus_text(const RootDir *root, const char *dir, char **ret) {
        return cgroup_read_attr(root, dir, "cpuset.cpus", ret);
}

static bool has_word(const char *list, const char *word) {
        size_t n = strlen(word);
        for (const char *p = list; *p;) {
                while (*p && isspace((unsigned char) *p))
                        p++;
                const char *e = p;
                while (*e && !isspace((unsigned char) *e))
                        e++;
                if ((size_t) (e - p) == n && strncmp(p, word, n) == 0)
                        return true;
                p = e;
        }
        return false;
}

int act_cgroup_choose_backend(const RootDir *root, bool live, sd_bus *bus, const char *dir, bool v2,
                              ActuatorBackend *ret) {
        _cleanup_(freep) char *controllers = NULL, *partition = NULL, *cpus_path = NULL;
        _cleanup_cpuset_ CpuSet parent = NULL;
        int r;

        if (rootdir_access(root, dir, F_OK) < 0)
                return -ENOENT;

        if (v2) {
                /* Partitions are carved by their operator: their CPUs are not
                 * ours to move, and a write could invalidate the partition. */
                r = cgroup_read_attr(root, dir, "cpuset.cpus.partition", &partition);
                if (r >= 0 && (strncmp(partition, "root", 4) == 0 || strncmp(partition, "isolated", 8) == 0))
                        return -EPERM;
        }

        if (systemd_backend_eligible(live, bus, dir, v2)) {
                *ret = ACTUATOR_BACKEND_SYSTEMD;
                return 0;
        }

        if (v2) {
                r = cgroup_read_attr(root, dir, "cgroup.controllers", &controllers);
                if (r < 0 || !has_word(controllers, "cpuset")) {
                        *ret = ACTUATOR_BACKEND_THREADS;
                        return 0;
                }
        }
        if (asprintf(&cpus_path, "%s/cpuset.cpus", dir) < 0)
                return -ENOMEM;
        /* Without the parent's effective CPUs (the hierarchy's root group)
         * no write can be checked against them: steer the threads. */
        if (rootdir_access(root, cpus_path, W_OK) < 0 ||
            act_cgroup_parent_effective(root, dir, v2, &parent) < 0) {
                *ret = ACTUATOR_BACKEND_THREADS;
                return 0;
        }
        *ret = ACTUATOR_BACKEND_CPUSET;
        return 0;
}

/* cpuset.cpus of the directory dirfd (confined, O_PATH), never a link. */
static int write_direct(int dirfd, const char *text) {
        _cleanup_(freep) char *line = NULL;
        _cleanup_(closep) int fd = -EBADF;

        if (asprintf(&line, "%s\n", text) < 0)
                return -ENOMEM;
        fd = openat(dirfd, "cpuset.cpus", O_WRONLY | O_TRUNC | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        size_t n = strlen(line);
        ssize_t k = write(fd, line, n);
        if (k < 0)
                return negative_errno();
        if ((size_t) k != n)
                return -EIO;
        return 0;
}

static int libcgroup_error(int r) {
        switch (r) {
        case 0:
                return 0;
        case ECGOTHER:
                return cgroup_get_last_errno() > 0 ? -cgroup_get_last_errno() : -EIO;
        case ECGROUPNOTEXIST:
        case ECGROUPVALUENOTEXIST:
                return -ENOENT;
        case ECGROUPNOTOWNER:
        case ECGROUPNOTALLOWED:
                return -EPERM;
        case ECGROUPNOTMOUNTED:
                return -ENODEV;
        case ECGINVAL:
                return -EINVAL;
        default:
                return -EIO;
        }
}

static void cgroup_free_one(struct cgroup *cg) {
        cgroup_free(&cg);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(struct cgroup *, cgroup_free_one);

static int write_libcgroup(Actuator *a, const char *dir, int dirfd, const char *text) {
        _cleanup_(cgroup_free_onep) struct cgroup *cg = NULL;
        _cleanup_(freep) char *mount = NULL;
        struct cgroup_controller *ctl;
        int r;

        if (!a->libcgroup_ready) {
                /* cgroup_init() fills library-global tables; it is called once
                 * per actuator, lazily, because only cpuset writes need it. */
                r = libcgroup_error(cgroup_init());
                if (r < 0)
                        return log_warning_errno(r, "libcgroup: cgroup_init() failed");
                a->libcgroup_ready = true;
        }

        r = libcgroup_error(cgroup_get_subsys_mount_point("cpuset", &mount));
        if (r < 0)
                return r;
        size_t n = strlen(mount);
        if (strncmp(dir, mount, n) != 0 || (dir[n] != '/' && dir[n] != '\0')) {
                /* libcgroup knows another cpuset mount than the one the cgroup
                 * lives in (a bind mount, a namespace): write it ourselves. */
                log_debug("libcgroup mounts cpuset at %s, not above %s: writing directly", mount, dir);
                return write_direct(dirfd, text);
        }
        const char *rel = dir[n] ? dir + n : "/";

        cg = cgroup_new_cgroup(rel);
        if (!cg)
                return -ENOMEM;
        ctl = cgroup_add_controller(cg, "cpuset");
        if (!ctl)
                return -ENOMEM;
        r = libcgroup_error(cgroup_add_value_string(ctl, "cpuset.cpus", text));
        if (r < 0)
                return r;
        return libcgroup_error(cgroup_modify_cgroup(cg));
}

int act_cgroup_write_cpus(Actuator *a, const char *dir, const char *text) {
        _cleanup_(closep) int dirfd = -EBADF;
        char why[CGROUP_WHY_MAX];

        /* Whatever the record says, nothing is written outside the cgroup
         * mounts (a state file, a directory that changed since it was
         * resolved). */
        int r = cgroup_dir_confined(a->root, &a->mounts, dir, NULL, &dirfd, why, sizeof(why));
        if (r == CGROUP_NOT_CONFINED)
                log_warning("%s: cpuset.cpus not written: %s", dir, why);
        if (r < 0)
                return r;
        /* libcgroup cannot be pointed at a fixture tree, and silently skips
         * empty values (verified with libcgroup 2.0.2): v2's "" (inherit the
         * parent's CPUs) is written directly, as "\n" like `echo > file`. */
        if (!a->live || !*text)
                r = write_direct(dirfd, text);
        else
                r = write_libcgroup(a, dir, dirfd, text);
        if (r >= 0 && a->write_hook)
                a->write_hook(dir, a->write_hook_userdata);
        return r;
}

int act_cgroup_record(ActCtx *c, const OptedIn *cg, const CgroupSample *cs, ActuatorBackend backend,
                      ActCgroup *ret) {
        Actuator *a = c->a;
        ActCgroup n = {.backend = backend, .v2 = cg->v2};
        int r;

        n.name = strdup(cg->name);
        n.dir = strdup(cg->dir);
        if (!n.name || !n.dir) {
                r = -ENOMEM;
                goto fail;
        }
        switch (backend) {
        case ACTUATOR_BACKEND_CPUSET:
                r = act_cgroup_read_cpus_text(a->root, cg->dir, &n.original_text);
                if (r < 0)
                        goto fail;
                break;
        case ACTUATOR_BACKEND_SYSTEMD: {
                _cleanup_cpuset_ CpuSet allowed = NULL;
                r = systemd_unit_from_cgroup(cg->dir, &n.unit);
                if (r < 0)
                        goto fail;
                r = systemd_get_allowed_cpus(a->bus, n.unit, &allowed);
                if (r < 0)
                        goto fail;
                r = cpuset_format(allowed, &n.original_text);
                if (r < 0)
                        goto fail;
                break;
        }
        default:
                break;
        }
        /* What the cgroup had: what the sampler reports as its "allowed"
         * while steerd holds it. */
        r = backend == ACTUATOR_BACKEND_THREADS
                    ? -ENOENT
                    : cgroup_effective_cpus(a->root, cg->dir, cg->v2, &n.original);
        if (r < 0) {
                if (cs && cs->cpus)
                        n.original = hwloc_bitmap_dup(cs->cpus);
                else if (c->online)
                        n.original = hwloc_bitmap_dup(c->online);
        }
        if (!n.original) {
                r = -ENOMEM;
                goto fail;
        }
        *ret = n;
        return 0;
fail:
        act_cgroup_done(&n);
        return r;
}
