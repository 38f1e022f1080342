/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <fcntl.h>
#include <sys/xattr.h>

#include "log.h"
#include "optin.h"

static const char *const optin_source_table[_OPTIN_SOURCE_MAX] = {
        [OPTIN_SOURCE_RUNTIME] = "runtime",
        [OPTIN_SOURCE_CONFIG] = "config",
        [OPTIN_SOURCE_XATTR] = "xattr",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(optin_source, OptInSource, _OPTIN_SOURCE_MAX);

void optin_set_done(OptInSet *s) {
        for (size_t i = 0; i < s->n; i++) {
                free(s->items[i].name);
                cgroup_location_done(&s->items[i].loc);
        }
        free(s->items);
        *s = (OptInSet){};
}

static int cmp_optin(const void *a, const void *b) {
        return strcmp(((const OptIn *) a)->name, ((const OptIn *) b)->name);
}

const OptIn *optin_set_find(const OptInSet *s, const char *name) {
        OptIn key = {.name = (char *) name};
        return s->n ? bsearch(&key, s->items, s->n, sizeof(OptIn), cmp_optin) : NULL;
}

typedef struct Scan {
        const RootDir *root;
        OptInEntry *items;
        size_t n, alloc;
        unsigned max_depth;
} Scan;

static int scan_push(Scan *s, const char *name, CgroupPolicy p) {
        for (size_t i = 0; i < s->n; i++)
                if (streq(s->items[i].cgroup, name))
                        return 0; /* the same path in v2 and v1: the first (v2) wins */
        if (s->n == s->alloc) {
                size_t n = s->alloc ? s->alloc * 2 : 16;
                OptInEntry *e = realloc(s->items, n * sizeof(*e));
                if (!e)
                        return -ENOMEM;
                s->items = e;
                s->alloc = n;
        }
        char *d = strdup(name);
        if (!d)
                return -ENOMEM;
        s->items[s->n++] = (OptInEntry){.cgroup = d, .policy = p};
        return 0;
}

/* dirfd: an open directory; rel: its path under the mount ("" = the mount). */
static int scan_dir(Scan *s, int dirfd, const char *rel, const char *shown, unsigned depth) {
        char value[64];
        ssize_t n = fgetxattr(dirfd, STEERD_XATTR, value, sizeof(value) - 1);
        if (n >= 0) {
                value[n] = '\0';
                /* Tools often store a trailing newline. */
                while (n > 0 && (value[n - 1] == '\n' || value[n - 1] == ' '))
                        value[--n] = '\0';
                CgroupPolicy p = cgroup_policy_from_string(value);
                if (p < 0)
                        log_warning("%s: %s='%s' is not a policy (latency, balanced); ignored", shown,
                                    STEERD_XATTR, value);
                else {
                        int r = scan_push(s, *rel ? rel : "/", p);
                        if (r < 0)
                                return r;
                }
        }
        if (depth >= s->max_depth)
                return 0;

        int fd = dup(dirfd);
        if (fd < 0)
                return negative_errno();
        _cleanup_(closedirp) DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return negative_errno();
        }
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                _cleanup_(closep) int sub =
                        openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (sub < 0)
                        continue; /* removed meanwhile */
                _cleanup_(freep) char *subrel = NULL, *subshown = NULL;
                if (asprintf(&subrel, "%s/%s", rel, de->d_name) < 0 ||
                    asprintf(&subshown, "%s/%s", shown, de->d_name) < 0)
                        return -ENOMEM;
                int r = scan_dir(s, sub, subrel, subshown, depth + 1);
                if (r < 0)
                        return r;
        }
        return 0;
}

int optin_scan_xattrs(const RootDir *root, const CgroupMounts *m, unsigned max_depth, OptInEntry **ret,
                      size_t *ret_n) {
        Scan s = {.root = root, .max_depth = max_depth};
        const char *const mounts[] = {m->v2, m->v1_cpuset};

        for (size_t i = 0; i < ELEMENTSOF(mounts); i++) {
                if (!mounts[i])
                        continue;
                _cleanup_(closep) int fd = -EBADF;
                if (rootdir_open_file(root, mounts[i], O_RDONLY | O_DIRECTORY, &fd) < 0)
                        continue;
                int r = scan_dir(&s, fd, "", mounts[i], 0);
                if (r < 0) {
                        optin_entries_free(s.items, s.n);
                        return r;
                }
        }
        *ret = s.items;
        *ret_n = s.n;
        return 0;
}

static int add(OptInSet *set, const RootDir *root, const CgroupMounts *m, const OptInEntry *e,
               OptInSource src) {
        for (size_t i = 0; i < set->n; i++)
                if (streq(set->items[i].name, e->cgroup))
                        return 0; /* a source of higher precedence had it */
        OptIn *o = &set->items[set->n];
        *o = (OptIn){.policy = e->policy, .source = src};
        o->name = strdup(e->cgroup);
        if (!o->name)
                return -ENOMEM;
        int r = cgroup_resolve(root, m, e->cgroup, &o->loc);
        if (r < 0 && r != -ENOENT) {
                free(o->name);
                return r;
        }
        set->n++;
        return 0;
}

int optin_set_build(const RootDir *root, const CgroupMounts *m, const OptInEntry *runtime, size_t n_runtime,
                    const OptInEntry *config, size_t n_config, const OptInEntry *xattr, size_t n_xattr,
                    OptInSet *ret) {
        OptInSet set = {};
        const struct {
                const OptInEntry *e;
                size_t n;
                OptInSource src;
        } sources[] = {
                {runtime, n_runtime, OPTIN_SOURCE_RUNTIME},
                {config, n_config, OPTIN_SOURCE_CONFIG},
                {xattr, n_xattr, OPTIN_SOURCE_XATTR},
        };
        int r;

        set.items = calloc(n_runtime + n_config + n_xattr + 1, sizeof(OptIn));
        if (!set.items)
                return -ENOMEM;
        for (size_t s = 0; s < ELEMENTSOF(sources); s++)
                for (size_t i = 0; i < sources[s].n; i++) {
                        r = add(&set, root, m, &sources[s].e[i], sources[s].src);
                        if (r < 0) {
                                optin_set_done(&set);
                                return r;
                        }
                }
        qsort(set.items, set.n, sizeof(OptIn), cmp_optin);
        *ret = set;
        return 0;
}
