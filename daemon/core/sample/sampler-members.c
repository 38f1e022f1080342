/* SPDX-License-Identifier: MIT */
/* The membership layer: which threads and processes an opted-in cgroup
 * holds. The kernel builds (and sorts) a task list from every task of the
 * cgroup on each read, so with the proc connector's joins it is read only
 * every SAMPLER_MEMBERS_EVERY samples, to heal what the events missed. */

#include "lines.h"
#include "log.h"
#include "sampler-internal.h"

int parse_tid(const char *p, const char *eol, pid_t *ret) {
        char *end;

        errno = 0;
        long tid = strtol(p, &end, 10);
        if (errno || end == p || end != eol || tid <= 0 || tid > INT32_MAX)
                return -EINVAL;
        *ret = (pid_t) tid;
        return 0;
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return (x > y) - (x < y);
}

bool pid_array_has(const pid_t *a, size_t n, pid_t v) {
        return n > 0 && bsearch(&v, a, n, sizeof(pid_t), cmp_pid);
}

/* The index of the first element >= v. */
static size_t pid_lower_bound(const pid_t *a, size_t n, pid_t v) {
        size_t lo = 0, hi = n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (a[mid] < v)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

int pid_array_insert(pid_t **a, size_t *n, size_t *alloc, pid_t v) {
        size_t i = pid_lower_bound(*a, *n, v);
        if (i < *n && (*a)[i] == v)
                return 0;
        if (*n == *alloc) {
                size_t na = *alloc ? *alloc * 2 : 64;
                pid_t *p = realloc(*a, na * sizeof(pid_t));
                if (!p)
                        return -ENOMEM;
                *a = p;
                *alloc = na;
        }
        memmove(*a + i + 1, *a + i, (*n - i) * sizeof(pid_t));
        (*a)[i] = v;
        (*n)++;
        return 1;
}

bool pid_array_remove(pid_t *a, size_t *n, pid_t v) {
        size_t i = pid_lower_bound(a, *n, v);
        if (i >= *n || a[i] != v)
                return false;
        memmove(a + i, a + i + 1, (*n - i - 1) * sizeof(pid_t));
        (*n)--;
        return true;
}

/* The ids of a task list, sorted, without duplicates; malformed lines are
 * logged and skipped. */
static int read_ids(Sampler *s, const char *dir, const char *name, pid_t **ret, size_t *ret_n) {
        _cleanup_(freep) char *path = NULL, *list = NULL;
        _cleanup_(freep) pid_t *ids = NULL;
        size_t n_lines = 0, n = 0;
        unsigned lineno = 0;
        int r;

        if (asprintf(&path, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        r = sampler_read_file(s, path, &list);
        if (r < 0)
                return r; /* -ENOENT: the cgroup is gone */
        for (const char *p = list; *p; p++)
                n_lines += *p == '\n';
        ids = calloc(n_lines + 1, sizeof(pid_t));
        if (!ids)
                return -ENOMEM;
        FOREACH_LINE(p, eol, list) {
                /* Empty lines are skipped and, as strtok_r() did, not counted. */
                if (p == eol)
                        continue;
                lineno++;
                if (parse_tid(p, eol, &ids[n]) < 0) {
                        log_parse_error(DISPLAY(s, path), lineno, "'%.*s' is not a thread id",
                                        (int) (eol - p), p);
                        continue;
                }
                n++;
        }
        qsort(ids, n, sizeof(pid_t), cmp_pid);
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
                if (k == 0 || ids[k - 1] != ids[i])
                        ids[k++] = ids[i];
        *ret = TAKE_PTR(ids);
        *ret_n = k;
        return 0;
}

/* The processes as listed now, each keeping its last CPU-time reading. */
static int procs_update(CgroupCache *cc, const pid_t *tgids, size_t n) {
        ProcUsage *procs = calloc(MAX(n, (size_t) 1), sizeof(ProcUsage));
        size_t old = 0;

        if (!procs)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                while (old < cc->n_procs && cc->procs[old].tgid < tgids[i])
                        old++;
                if (old < cc->n_procs && cc->procs[old].tgid == tgids[i]) {
                        procs[i] = cc->procs[old];
                        cc->procs[old].fd = -EBADF; /* taken over */
                } else
                        procs[i] = (ProcUsage){.tgid = tgids[i], .fd = -EBADF};
        }
        for (size_t k = 0; k < cc->n_procs; k++)
                closep(&cc->procs[k].fd); /* processes that left */
        free(cc->procs);
        cc->procs = procs;
        cc->n_procs = cc->alloc_procs = n;
        return 0;
}

static bool same_procs(const CgroupCache *cc, const pid_t *tgids, size_t n) {
        if (n != cc->n_procs)
                return false;
        for (size_t i = 0; i < n; i++)
                if (cc->procs[i].tgid != tgids[i])
                        return false;
        return true;
}

int members_refresh(Sampler *s, CgroupCache *cc) {
        _cleanup_(freep) pid_t *tids = NULL, *tgids = NULL;
        size_t n_tids, n_tgids;
        int r;

        bool heal = !cc->members_valid || !s->membership_events ||
                    s->n_samples - cc->members_read >= SAMPLER_MEMBERS_EVERY;
        if (!heal && cc->n_tids >= SAMPLER_MEMBERS_SMALL)
                return 0;
        /* A small cgroup between heals, settled (a process in it, none come
         * or gone of late): its process list now and then. */
        if (!heal && cc->n_procs > 0 && s->n_samples - cc->procs_changed >= SAMPLER_MEMBERS_FRESH &&
            s->n_samples - cc->procs_read < SAMPLER_MEMBERS_SMALL_EVERY)
                return 0;
        /* The processes only matter where they stand in for the cgroup's own
         * accounting; a file that cannot be read leaves the list as it was. */
        bool have_procs = read_ids(s, cc->dir, "cgroup.procs", &tgids, &n_tgids) >= 0;
        if (have_procs)
                cc->procs_read = s->n_samples;
        if (have_procs && !same_procs(cc, tgids, n_tgids))
                cc->procs_changed = s->n_samples;
        /* A small cgroup between heals: its processes say whether one moved
         * in or out; the events cover its threads. */
        if (!heal && have_procs && same_procs(cc, tgids, n_tgids))
                return 0;
        r = read_ids(s, cc->dir, cc->v2 ? "cgroup.threads" : "tasks", &tids, &n_tids);
        if (r < 0)
                return r;
        if (have_procs) {
                r = procs_update(cc, tgids, n_tgids);
                if (r < 0)
                        return r;
        }
        free(cc->tids);
        cc->tids = TAKE_PTR(tids);
        cc->n_tids = cc->alloc_tids = n_tids;
        cc->members_valid = true;
        cc->members_read = s->n_samples;
        cc->no_own = false; /* cpuacct may have been mounted since */
        return 0;
}

static CgroupCache *cache_by_dir(Sampler *s, const char *dir) {
        for (size_t i = 0; i < s->n_cgroups; i++)
                if (streq(s->cgroups[i].dir, dir))
                        return &s->cgroups[i];
        return NULL;
}

void sampler_member_joined(Sampler *s, const char *dir, pid_t tid, pid_t tgid) {
        CgroupCache *cc = cache_by_dir(s, dir);
        if (!cc || !cc->members_valid)
                return;
        if (pid_array_insert(&cc->tids, &cc->n_tids, &cc->alloc_tids, tid) < 0) {
                cc->members_valid = false; /* read afresh next time */
                return;
        }
        size_t i = 0;
        while (i < cc->n_procs && cc->procs[i].tgid < tgid)
                i++;
        if (i < cc->n_procs && cc->procs[i].tgid == tgid)
                return;
        if (cc->n_procs == cc->alloc_procs) {
                size_t na = cc->alloc_procs ? cc->alloc_procs * 2 : 16;
                ProcUsage *p = realloc(cc->procs, na * sizeof(ProcUsage));
                if (!p) {
                        cc->members_valid = false;
                        return;
                }
                cc->procs = p;
                cc->alloc_procs = na;
        }
        memmove(cc->procs + i + 1, cc->procs + i, (cc->n_procs - i) * sizeof(ProcUsage));
        cc->procs_changed = s->n_samples;
        /* A process new to the cgroup brings its history: its first reading
         * only primes. */
        cc->procs[i] = (ProcUsage){.tgid = tgid, .fd = -EBADF};
        cc->n_procs++;
}

bool cgroup_cache_has_proc(const CgroupCache *cc, pid_t tgid) {
        size_t lo = 0, hi = cc->n_procs;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (cc->procs[mid].tgid == tgid)
                        return true;
                if (cc->procs[mid].tgid < tgid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return false;
}

int sampler_member_cgroup(const Sampler *s, pid_t tid, pid_t tgid, pid_t parent_tgid, const char **ret_dir) {
        bool unknown = false;

        for (size_t i = 0; i < s->n_cgroups; i++) {
                const CgroupCache *cc = &s->cgroups[i];
                if (!cc->members_valid) {
                        unknown = true;
                        continue;
                }
                bool thread = tid != tgid;
                if (cgroup_cache_has_proc(cc, thread ? tgid : parent_tgid) ||
                    (thread && pid_array_has(cc->tids, cc->n_tids, tgid))) {
                        *ret_dir = cc->dir;
                        return 1;
                }
        }
        return unknown ? -ENODATA : 0;
}

void sampler_members_stale(Sampler *s) {
        for (size_t i = 0; i < s->n_cgroups; i++)
                s->cgroups[i].members_valid = false;
}

void sampler_set_membership_events(Sampler *s, bool on) {
        s->membership_events = on;
}

bool sampler_all_quiet(const Sampler *s) {
        return s->all_quiet;
}

void sampler_set_host_idle(Sampler *s, bool idle) {
        s->host_idle = idle;
}

void sampler_set_full(Sampler *s, bool full) {
        s->full = full;
}
