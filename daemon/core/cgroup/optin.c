/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "cgroup-confine.h"
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
                free(s->items[i].rule);
                free(s->items[i].refused);
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
        OptInEntry *items;
        size_t n, alloc;
        OptInMatch *matches;
        size_t n_matches, alloc_matches;
        const char *const *rules;
        const OptInRuleKind *kinds;
        size_t n_rules;
        unsigned max_depth;
        bool v2;   /* walking the cgroup2 tree: the one systemd names after its units */
        dev_t dev; /* the mount's device: a directory on another is not walked into */
} Scan;

static int scan_push(Scan *s, const char *name, CgroupPolicy p) {
        for (size_t i = 0; i < s->n; i++)
                if (streq(s->items[i].cgroup, name))
                        return 0; /* the same path in v2 and v1: the first (v2) wins */
        if (s->n == s->alloc) {
                size_t n = s->alloc ? s->alloc * 2 : 16;
                OptInEntry *e = reallocarray(s->items, n, sizeof(*e));
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

static int scan_push_match(Scan *s, const char *cgroup, const char *rule) {
        for (size_t i = 0; i < s->n_matches; i++)
                if (streq(s->matches[i].rule, rule) && streq(s->matches[i].cgroup, cgroup))
                        return 0; /* the same path in v2 and v1: one match */
        if (s->n_matches == s->alloc_matches) {
                size_t n = s->alloc_matches ? s->alloc_matches * 2 : 16;
                OptInMatch *e = reallocarray(s->matches, n, sizeof(*e));
                if (!e)
                        return -ENOMEM;
                s->matches = e;
                s->alloc_matches = n;
        }
        OptInMatch *x = &s->matches[s->n_matches];
        *x = (OptInMatch){.rule = strdup(rule), .cgroup = strdup(cgroup)};
        if (!x->rule || !x->cgroup) {
                free(x->rule);
                free(x->cgroup);
                return -ENOMEM;
        }
        s->n_matches++;
        return 0;
}

static int scan_xattr(Scan *s, int dirfd, const char *rel, const char *shown) {
        char value[64];
        ssize_t n = fgetxattr(dirfd, STEERD_XATTR, value, sizeof(value) - 1);
        if (n < 0)
                return 0;
        value[n] = '\0';
        /* Tools often store a trailing newline. */
        while (n > 0 && (value[n - 1] == '\n' || value[n - 1] == ' '))
                value[--n] = '\0';
        CgroupPolicy p = cgroup_policy_from_string(value);
        if (p < 0) {
                log_warning("%s: %s='%s' is not a policy (latency, balanced); ignored", shown, STEERD_XATTR,
                            value);
                return 0;
        }
        return scan_push(s, *rel ? rel : "/", p);
}

/* rel: the path under the mount ("" = the mount), shown: the absolute one. */
static int scan_rules(Scan *s, const char *rel, const char *shown) {
        const char *path = *rel ? rel : "/", *base = strrchr(path, '/') + 1;

        for (size_t i = 0; i < s->n_rules; i++) {
                bool hit =
                        s->kinds[i] == OPTIN_RULE_GLOB
                                ? optin_glob_match(s->rules[i], path) || optin_glob_match(s->rules[i], shown)
                                : s->kinds[i] == OPTIN_RULE_UNIT && s->v2 && streq(base, s->rules[i]);
                if (hit) {
                        int r = scan_push_match(s, path, s->rules[i]);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int scan_dir(Scan *s, int dirfd, const char *rel, const char *shown, unsigned depth) {
        int r;

        if ((r = scan_xattr(s, dirfd, rel, shown)) < 0 || (r = scan_rules(s, rel, shown)) < 0)
                return r;
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
                        continue; /* removed meanwhile, or a symbolic link */
                struct stat st;
                if (fstat(sub, &st) < 0 || st.st_dev != s->dev) {
                        log_debug("%s/%s: another file system mounted into the cgroup tree; not walked",
                                  shown, de->d_name);
                        continue;
                }
                _cleanup_(freep) char *subrel = NULL, *subshown = NULL;
                if (asprintf(&subrel, "%s/%s", rel, de->d_name) < 0 ||
                    asprintf(&subshown, "%s/%s", shown, de->d_name) < 0)
                        return -ENOMEM;
                r = scan_dir(s, sub, subrel, subshown, depth + 1);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int cmp_match(const void *a, const void *b) {
        const OptInMatch *x = a, *y = b;
        int c = strcmp(x->rule, y->rule);
        return c != 0 ? c : strcmp(x->cgroup, y->cgroup);
}

void optin_scan_done(OptInScan *s) {
        optin_entries_free(s->xattr, s->n_xattr);
        for (size_t i = 0; i < s->n_matches; i++) {
                free(s->matches[i].rule);
                free(s->matches[i].cgroup);
        }
        free(s->matches);
        *s = (OptInScan){};
}

/* The mount point, confined like any cgroup directory (no symbolic link on
 * the way to it), opened for reading; its device in *ret_dev. */
static int open_mount(const RootDir *root, const CgroupMounts *m, const char *mount, dev_t *ret_dev) {
        char why[CGROUP_WHY_MAX];
        _cleanup_(closep) int path_fd = -EBADF;
        struct stat st;

        int r = cgroup_dir_confined(root, m, mount, NULL, &path_fd, why, sizeof(why));
        if (r < 0) {
                if (r == CGROUP_NOT_CONFINED)
                        log_warning("Cgroup mount %s: %s; not walked", mount, why);
                return r;
        }
        int fd = openat(path_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0) {
                r = negative_errno();
                close(fd);
                return r;
        }
        *ret_dev = st.st_dev;
        return fd;
}

int optin_scan(const RootDir *root, const CgroupMounts *m, unsigned max_depth, const char *const *rules,
               size_t n_rules, OptInScan *ret) {
        _cleanup_(freep) OptInRuleKind *kinds = calloc(n_rules + 1, sizeof(OptInRuleKind));
        const char *const mounts[] = {m->v2, m->v1_cpuset};
        Scan s = {.rules = rules, .n_rules = n_rules, .max_depth = max_depth};
        int r = 0;

        if (!kinds)
                return -ENOMEM;
        for (size_t i = 0; i < n_rules; i++)
                kinds[i] = optin_rule_kind(rules[i]);
        s.kinds = kinds;
        for (size_t i = 0; i < ELEMENTSOF(mounts) && r >= 0; i++) {
                if (!mounts[i])
                        continue;
                _cleanup_(closep) int fd = open_mount(root, m, mounts[i], &s.dev);
                if (fd < 0)
                        continue;
                s.v2 = i == 0;
                r = scan_dir(&s, fd, "", mounts[i], 0);
        }
        OptInScan out = {.xattr = s.items,
                         .n_xattr = s.n,
                         .matches = s.matches,
                         .n_matches = s.n_matches,
                         .alloc_matches = s.alloc_matches};
        if (r < 0) {
                optin_scan_done(&out);
                return r;
        }
        if (out.n_matches > 1)
                qsort(out.matches, out.n_matches, sizeof(OptInMatch), cmp_match);
        *ret = out;
        return 0;
}

int optin_scan_add_match(OptInScan *s, const char *rule, const char *cgroup) {
        Scan x = {.matches = s->matches, .n_matches = s->n_matches, .alloc_matches = s->alloc_matches};
        int r = scan_push_match(&x, cgroup, rule);
        s->matches = x.matches;
        s->n_matches = x.n_matches;
        s->alloc_matches = x.alloc_matches;
        if (r >= 0 && s->n_matches > 1)
                qsort(s->matches, s->n_matches, sizeof(OptInMatch), cmp_match);
        return r;
}

const OptInMatch *optin_scan_find(const OptInScan *s, const char *rule) {
        for (size_t i = 0; i < s->n_matches; i++)
                if (streq(s->matches[i].rule, rule))
                        return &s->matches[i];
        return NULL;
}

int optin_scan_xattrs(const RootDir *root, const CgroupMounts *m, unsigned max_depth, OptInEntry **ret,
                      size_t *ret_n) {
        OptInScan s = {};
        int r = optin_scan(root, m, max_depth, NULL, 0, &s);
        if (r < 0)
                return r;
        *ret_n = s.n_xattr;
        *ret = TAKE_PTR(s.xattr);
        s.n_xattr = 0;
        optin_scan_done(&s);
        return 0;
}

static int add(OptInSet *set, const RootDir *root, const CgroupMounts *m, const OptInCandidate *c) {
        char why[CGROUP_WHY_MAX] = "";

        for (size_t i = 0; i < set->n; i++)
                if (streq(set->items[i].name, c->cgroup))
                        return 0; /* a candidate of higher precedence had it */
        OptIn *o = &set->items[set->n];
        *o = (OptIn){.policy = c->policy, .evaluate = c->evaluate, .search = c->search, .source = c->source};
        o->name = strdup(c->cgroup);
        o->rule = strdup(c->rule ?: c->cgroup);
        int r = o->name && o->rule ? cgroup_resolve_full(root, m, c->cgroup, &o->loc, why, sizeof(why))
                                   : -ENOMEM;
        if (r == CGROUP_NOT_CONFINED && !(o->refused = strdup(why)))
                r = -ENOMEM;
        /* What a glob or unit matched and is gone again (removed between
         * the walk and now) is no opt-in waiting for its cgroup: only a
         * path names one that may come. */
        bool vanished = r == -ENOENT && c->rule && optin_rule_kind(c->rule) != OPTIN_RULE_PATH &&
                        !streq(c->rule, STEERD_XATTR);
        if ((r < 0 && r != -ENOENT && r != CGROUP_NOT_CONFINED) || vanished) {
                free(o->name);
                free(o->rule);
                free(o->refused);
                return vanished ? 0 : r;
        }
        set->n++;
        return 0;
}

int optin_set_build(const RootDir *root, const CgroupMounts *m, const OptInCandidate *c, size_t n,
                    OptInSet *ret) {
        OptInSet set = {};

        set.items = calloc(n + 1, sizeof(OptIn));
        if (!set.items)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                int r = add(&set, root, m, &c[i]);
                if (r < 0) {
                        optin_set_done(&set);
                        return r;
                }
        }
        qsort(set.items, set.n, sizeof(OptIn), cmp_optin);
        *ret = set;
        return 0;
}

typedef struct Candidates {
        OptInCandidate *items;
        size_t n, alloc;
} Candidates;

static void candidates_done(Candidates *c) {
        free(c->items);
}

static int candidate_push(Candidates *c, const char *cgroup, const OptInEntry *e, OptInSource src) {
        if (c->n == c->alloc) {
                size_t n = c->alloc ? c->alloc * 2 : 32;
                OptInCandidate *x = reallocarray(c->items, n, sizeof(*x));
                if (!x)
                        return -ENOMEM;
                c->items = x;
                c->alloc = n;
        }
        c->items[c->n++] = (OptInCandidate){.cgroup = cgroup,
                                            .rule = e->cgroup,
                                            .policy = e->policy,
                                            .evaluate = e->evaluate,
                                            .search = e->search,
                                            .source = src};
        return 0;
}

/* A source's rules in their precedence: explicit paths, then units (one
 * cgroup each), then globs, each kind in the order written. */
static int push_source(Candidates *c, const OptInScan *scan, const OptInEntry *e, size_t n,
                       OptInSource src) {
        static const OptInRuleKind order[] = {OPTIN_RULE_PATH, OPTIN_RULE_UNIT, OPTIN_RULE_GLOB};
        int r;

        for (size_t k = 0; k < ELEMENTSOF(order); k++)
                for (size_t i = 0; i < n; i++) {
                        if (optin_rule_kind(e[i].cgroup) != order[k])
                                continue;
                        if (order[k] == OPTIN_RULE_PATH) {
                                r = candidate_push(c, e[i].cgroup, &e[i], src);
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        const OptInMatch *x = optin_scan_find(scan, e[i].cgroup);
                        for (; x && x < scan->matches + scan->n_matches && streq(x->rule, e[i].cgroup);
                             x++) {
                                r = candidate_push(c, x->cgroup, &e[i], src);
                                if (r < 0)
                                        return r;
                        }
                }
        return 0;
}

int optin_candidates(const OptInScan *scan, const OptInEntry *runtime, size_t n_runtime,
                     const OptInEntry *config, size_t n_config, OptInCandidate **ret, size_t *ret_n) {
        _cleanup_(candidates_done) Candidates c = {};
        int r;

        if ((r = push_source(&c, scan, runtime, n_runtime, OPTIN_SOURCE_RUNTIME)) < 0 ||
            (r = push_source(&c, scan, config, n_config, OPTIN_SOURCE_CONFIG)) < 0)
                return r;
        for (size_t i = 0; i < scan->n_xattr; i++)
                if ((r = candidate_push(&c, scan->xattr[i].cgroup,
                                        &(const OptInEntry){.cgroup = (char *) STEERD_XATTR,
                                                            .policy = scan->xattr[i].policy},
                                        OPTIN_SOURCE_XATTR)) < 0)
                        return r;
        *ret_n = c.n;
        *ret = TAKE_PTR(c.items);
        return 0;
}

/* The first component of an absolute path is one of the host's pseudo file
 * systems, where the cgroup mounts and the magic links live. */
static bool names_host_dir(const char *rule) {
        static const char *const tops[] = {"proc", "sys", "dev"};
        const char *e = strchrnul(rule + 1, '/');

        for (size_t i = 0; i < ELEMENTSOF(tops); i++)
                if ((size_t) (e - rule - 1) == strlen(tops[i]) &&
                    strncmp(rule + 1, tops[i], e - rule - 1) == 0)
                        return true;
        return false;
}

int optin_rule_check(const RootDir *root, const CgroupMounts *m, const char *rule, bool check_dir, char *why,
                     size_t why_size) {
        OptInRuleKind kind = optin_rule_kind(rule);
        int r;

        if (kind < 0) {
                snprintf(why, why_size,
                         "'%.256s' is not a cgroup: an absolute path (/bench1) without '.', '..' or empty "
                         "components, a glob (/machine.slice/*) or a unit name (nginx.service)",
                         rule ?: "");
                return -EINVAL;
        }
        if (kind == OPTIN_RULE_UNIT)
                return 0;
        if (kind == OPTIN_RULE_PATH && cgroup_path_canonical(rule, why, why_size) < 0)
                return -EINVAL;
        bool at_mount = cgroup_path_confined(m, rule, NULL, NULL, 0) == 0;
        if (!at_mount && names_host_dir(rule)) {
                (void) cgroup_path_confined(m, rule, NULL, why, why_size);
                return CGROUP_NOT_CONFINED;
        }
        if (kind != OPTIN_RULE_PATH || !check_dir)
                return 0;
        CgroupLocation loc = {};
        r = cgroup_resolve_full(root, m, rule, &loc, why, why_size);
        cgroup_location_done(&loc);
        return r == -ENOENT ? 0 : r;
}
