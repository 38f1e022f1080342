/* SPDX-License-Identifier: MIT */
/* The engine's state: its lifetime, lookups, and carrying it over from one
 * snapshot to the next by identity. */

#include "policy-internal.h"
#include "tids.h"

void policy_layer_done(Layer *l) {
        hwloc_bitmap_free(l->mask);
        *l = (Layer){};
}

static void thread_state_done(ThreadState *t) {
        hwloc_bitmap_free(t->orig);
        hwloc_bitmap_free(t->own);
        policy_layer_done(&t->home);
        policy_layer_done(&t->pin);
}

static void cgroup_state_done(CgroupState *c) {
        free(c->path);
        hwloc_bitmap_free(c->orig);
        policy_layer_done(&c->home);
        policy_layer_done(&c->window);
        for (size_t i = 0; i < c->n_threads; i++)
                thread_state_done(&c->threads[i]);
        free(c->threads);
        free(c->by_sample);
}

void policy_state_clear(PolicyState *s) {
        for (size_t i = 0; i < s->n_cgroups; i++)
                cgroup_state_done(&s->cgroups[i]);
        free(s->cgroups);
        s->cgroups = NULL;
        s->n_cgroups = 0;
}

int policy_state_new(PolicyState **ret) {
        PolicyState *s;

        if (!ret)
                return -EINVAL;
        s = calloc(1, sizeof(PolicyState));
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

PolicyState *policy_state_free(PolicyState *s) {
        if (!s)
                return NULL;
        policy_state_clear(s);
        free(s);
        return NULL;
}

int policy_dup_mask(hwloc_const_bitmap_t m, CpuSet *ret) {
        if (!m) {
                *ret = NULL;
                return 0;
        }
        *ret = hwloc_bitmap_dup(m);
        return *ret ? 0 : -ENOMEM;
}

static int layer_dup(const Layer *from, Layer *to) {
        *to = (Layer){.exp = from->exp};
        return policy_dup_mask(from->mask, &to->mask);
}

static int thread_state_dup(const ThreadState *from, ThreadState *to) {
        int r;

        *to = *from;
        to->orig = to->own = NULL;
        to->home = to->pin = (Layer){};
        to->sample = NULL;
        to->acted = false;
        r = policy_dup_mask(from->orig, &to->orig);
        if (r >= 0)
                r = policy_dup_mask(from->own, &to->own);
        if (r >= 0)
                r = layer_dup(&from->home, &to->home);
        if (r >= 0)
                r = layer_dup(&from->pin, &to->pin);
        return r;
}

static int cgroup_state_dup(const CgroupState *from, CgroupState *to) {
        int r;

        *to = *from;
        to->path = NULL;
        to->orig = NULL;
        to->home = to->window = (Layer){};
        to->threads = NULL;
        to->n_threads = 0;
        to->sample = NULL;
        to->by_sample = NULL;
        to->acted = false;

        to->path = strdup(from->path);
        if (!to->path)
                return -ENOMEM;
        r = policy_dup_mask(from->orig, &to->orig);
        if (r >= 0)
                r = layer_dup(&from->home, &to->home);
        if (r >= 0)
                r = layer_dup(&from->window, &to->window);
        if (r < 0)
                return r;
        if (from->n_threads > 0) {
                to->threads = calloc(from->n_threads, sizeof(ThreadState));
                if (!to->threads)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < from->n_threads; i++) {
                r = thread_state_dup(&from->threads[i], &to->threads[i]);
                to->n_threads = i + 1;
                if (r < 0)
                        return r;
        }
        return 0;
}

int policy_state_dup(const PolicyState *s, PolicyState **ret) {
        _cleanup_policy_state_ PolicyState *d = NULL;
        int r;

        if (!s || !ret)
                return -EINVAL;
        r = policy_state_new(&d);
        if (r < 0)
                return r;
        d->counters = s->counters;
        if (s->n_cgroups > 0) {
                d->cgroups = calloc(s->n_cgroups, sizeof(CgroupState));
                if (!d->cgroups)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < s->n_cgroups; i++) {
                r = cgroup_state_dup(&s->cgroups[i], &d->cgroups[i]);
                d->n_cgroups = i + 1;
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(d);
        return 0;
}

void policy_state_counters(const PolicyState *s, PolicyCounters *ret) {
        if (!ret)
                return;
        *ret = s ? s->counters : (PolicyCounters){};
}

int policy_state_cgroup_figures(const PolicyState *s, const char *cgroup, PolicyCgroupFigures *ret) {
        const CgroupState *c = policy_state_find_cgroup(s, cgroup);
        PolicyCgroupFigures f = {};

        if (!c)
                return -ENOENT;
        f.counters = c->counters;
        if (c->window.mask)
                f.window_cpus = (unsigned) MAX(hwloc_bitmap_weight(c->window.mask), 0);
        for (size_t i = 0; i < c->n_threads; i++)
                if (c->threads[i].pin.mask || c->threads[i].home.mask)
                        f.held_threads++;
        if (ret)
                *ret = f;
        return 0;
}

static int cgroup_state_cmp(const void *a, const void *b) {
        return strcmp(((const CgroupState *) a)->path, ((const CgroupState *) b)->path);
}

const CgroupState *policy_state_find_cgroup(const PolicyState *s, const char *path) {
        CgroupState key = {.path = (char *) path};

        if (!s || !path || s->n_cgroups == 0)
                return NULL;
        if (s->n_cgroups == 0)
                return NULL;
        return bsearch(&key, s->cgroups, s->n_cgroups, sizeof(CgroupState), cgroup_state_cmp);
}

static int identity_cmp(pid_t ta, uint64_t sa, pid_t tb, uint64_t sb) {
        if (ta != tb)
                return ta < tb ? -1 : 1;
        if (sa != sb)
                return sa < sb ? -1 : 1;
        return 0;
}

static int thread_state_cmp(const void *a, const void *b) {
        const ThreadState *x = a, *y = b;
        return identity_cmp(x->tid, x->starttime, y->tid, y->starttime);
}

const ThreadState *policy_cgroup_state_find_thread(const CgroupState *c, pid_t tid, uint64_t starttime) {
        ThreadState key = {.tid = tid, .starttime = starttime};

        if (!c || c->n_threads == 0)
                return NULL;
        if (c->n_threads == 0)
                return NULL;
        return bsearch(&key, c->threads, c->n_threads, sizeof(ThreadState), thread_state_cmp);
}

bool policy_thread_holds(const ThreadState *t) {
        return t->home.mask || t->pin.mask;
}

bool policy_cgroup_holds(const CgroupState *c) {
        return c->home.mask || c->window.mask;
}

bool policy_state_holds(const PolicyState *s) {
        for (size_t i = 0; s && i < s->n_cgroups; i++) {
                const CgroupState *c = &s->cgroups[i];
                if (policy_cgroup_holds(c))
                        return true;
                for (size_t k = 0; k < c->n_threads; k++)
                        if (policy_thread_holds(&c->threads[k]))
                                return true;
        }
        return false;
}

hwloc_const_bitmap_t policy_thread_own_mask(const CgroupState *cs, const ThreadState *t,
                                            const ThreadSample *ts) {
        if (!t || !t->own || !cs || !policy_cgroup_holds(cs))
                return ts->allowed;
        if (!hwloc_bitmap_isincluded(ts->allowed, cs->window.mask ?: cs->home.mask))
                return ts->allowed; /* not narrowed by us (observe mode, or changed since) */
        return t->own;
}

int policy_state_held_tids(const PolicyState *s, const char *cgroup, pid_t **tids, size_t *n,
                           size_t *alloc) {
        const CgroupState *c = policy_state_find_cgroup(s, cgroup);

        for (size_t i = 0; c && i < c->n_threads; i++) {
                if (!policy_thread_holds(&c->threads[i]))
                        continue;
                int r = tids_append(tids, n, alloc, c->threads[i].tid);
                if (r < 0)
                        return r;
        }
        return 0;
}

int policy_state_let_go(PolicyState *s, const char *cgroup, pid_t tid, uint64_t starttime) {
        CgroupState *c;

        if (!s || !cgroup || tid < 0)
                return -EINVAL;
        c = (CgroupState *) policy_state_find_cgroup(s, cgroup);
        if (!c)
                return -ENOENT;

        if (tid == 0) {
                if (!policy_cgroup_holds(c))
                        return -ENOENT;
                policy_layer_done(&c->home);
                policy_layer_done(&c->window);
                c->window_llc = -1;
                c->window_consolidated = false;
                hwloc_bitmap_free(c->orig);
                c->orig = NULL;
                return 0;
        }

        ThreadState *t = (ThreadState *) policy_cgroup_state_find_thread(c, tid, starttime);
        if (!t || !policy_thread_holds(t))
                return -ENOENT;
        policy_layer_done(&t->home);
        policy_layer_done(&t->pin);
        hwloc_bitmap_free(t->orig);
        t->orig = NULL;
        return 0;
}

typedef struct SampleRef {
        const void *key; /* path, or ThreadSample */
        size_t index;
} SampleRef;

static int cgroup_ref_cmp(const void *a, const void *b) {
        const SampleRef *x = a, *y = b;
        int r = strcmp(x->key, y->key);
        if (r != 0)
                return r;
        return x->index < y->index ? -1 : x->index > y->index;
}

static int thread_ref_cmp(const void *a, const void *b) {
        const SampleRef *x = a, *y = b;
        const ThreadSample *tx = x->key, *ty = y->key;
        int r = identity_cmp(tx->tid, tx->starttime, ty->tid, ty->starttime);
        if (r != 0)
                return r;
        return x->index < y->index ? -1 : x->index > y->index;
}

static ThreadState new_thread_state(const ThreadSample *ts) {
        return (ThreadState){
                .tid = ts->tid,
                .starttime = ts->starttime,
                .left = {.llc = -1},
                .streak_unit = -1,
                .pin_unit = -1,
        };
}

/* A quiet cgroup lists only the threads steerd holds (threads_partial):
 * every other thread keeps its state as it is, without a sample this tick,
 * and nothing is forgotten. The listed ones are found (or added) in place,
 * so that the tick costs what is listed, not what the cgroup holds. */
static int sync_threads_partial(CgroupState *c) {
        const CgroupSample *cg = c->sample;

        free(c->by_sample);
        c->by_sample = calloc(MAX(cg->n_threads, (size_t) 1), sizeof(ThreadState *));
        if (!c->by_sample)
                return -ENOMEM;
        for (size_t i = 0; i < cg->n_threads; i++) {
                const ThreadSample *ts = &cg->threads[i];
                if (ts->tid <= 0 || policy_cgroup_state_find_thread(c, ts->tid, ts->starttime))
                        continue;
                ThreadState *p = realloc(c->threads, (c->n_threads + 1) * sizeof(ThreadState));
                if (!p)
                        return -ENOMEM;
                c->threads = p;
                size_t k = c->n_threads;
                while (k > 0 && identity_cmp(c->threads[k - 1].tid, c->threads[k - 1].starttime, ts->tid,
                                             ts->starttime) > 0) {
                        c->threads[k] = c->threads[k - 1];
                        k--;
                }
                c->threads[k] = new_thread_state(ts);
                c->n_threads++;
        }
        for (size_t i = 0; i < cg->n_threads; i++) {
                const ThreadSample *ts = &cg->threads[i];
                ThreadState *t = (ThreadState *) policy_cgroup_state_find_thread(c, ts->tid, ts->starttime);
                if (!t || t->sample)
                        continue; /* a duplicate identity: the first one counts */
                t->sample = ts;
                t->acted = false;
                c->by_sample[i] = t;
        }
        return 0;
}

/* Carries the threads' state over to this tick's threads of the cgroup: a
 * thread whose (tid, starttime) is gone is forgotten without an action, a new
 * identity starts afresh. Both lists are walked in identity order. */
static int sync_threads(CgroupState *c) {
        const CgroupSample *cg = c->sample;
        _cleanup_(freep) SampleRef *refs = NULL;
        _cleanup_(freep) ThreadState *threads = NULL;
        size_t n = 0, old = 0, room = cg->n_threads;

        free(c->by_sample);
        c->by_sample = calloc(MAX(cg->n_threads, (size_t) 1), sizeof(ThreadState *));
        refs = calloc(MAX(cg->n_threads, (size_t) 1), sizeof(SampleRef));
        threads = calloc(MAX(room, (size_t) 1), sizeof(ThreadState));
        if (!c->by_sample || !refs || !threads)
                return -ENOMEM;

        for (size_t i = 0; i < cg->n_threads; i++)
                refs[i] = (SampleRef){.key = &cg->threads[i], .index = i};
        qsort(refs, cg->n_threads, sizeof(SampleRef), thread_ref_cmp);

        for (size_t i = 0; i < cg->n_threads; i++) {
                const ThreadSample *ts = refs[i].key;

                if (ts->tid <= 0)
                        continue;
                if (n > 0 && threads[n - 1].tid == ts->tid && threads[n - 1].starttime == ts->starttime)
                        continue; /* a duplicate identity: the first one counts */

                while (old < c->n_threads && identity_cmp(c->threads[old].tid, c->threads[old].starttime,
                                                          ts->tid, ts->starttime) < 0)
                        thread_state_done(&c->threads[old++]);

                ThreadState *t = &threads[n++];
                if (old < c->n_threads && c->threads[old].tid == ts->tid &&
                    c->threads[old].starttime == ts->starttime) {
                        *t = c->threads[old];
                        c->threads[old++] = (ThreadState){};
                } else
                        *t = new_thread_state(ts);
                t->sample = ts;
                t->acted = false;
        }
        while (old < c->n_threads)
                thread_state_done(&c->threads[old++]);
        free(c->threads);

        c->threads = TAKE_PTR(threads);
        c->n_threads = n;
        /* by_sample points into the final array, which no longer moves this tick. */
        for (size_t k = 0; k < n; k++)
                c->by_sample[c->threads[k].sample - cg->threads] = &c->threads[k];
        return 0;
}

/* The snapshot's cgroups the engine can act on (a path and both masks), in
 * path order. */
static size_t cgroup_refs(const Snapshot *snap, SampleRef *refs) {
        size_t n = 0;

        for (size_t i = 0; i < snap->n_cgroups; i++)
                if (snap->cgroups[i].path && snap->cgroups[i].allowed && snap->cgroups[i].cpus)
                        refs[n++] = (SampleRef){.key = snap->cgroups[i].path, .index = i};
        qsort(refs, n, sizeof(SampleRef), cgroup_ref_cmp);
        return n;
}

/* Moves the state of each cgroup still in the snapshot into cgroups (by
 * path, in path order), starts the new ones afresh and forgets the rest; fills
 * the tick's lookup by snapshot index. Both lists are walked in path order. */
static int carry_cgroups(PolicyCtx *ctx, const SampleRef *refs, size_t n_refs, CgroupState *cgroups,
                         size_t *ret_n) {
        const Snapshot *snap = ctx->snap;
        PolicyState *s = ctx->state;
        size_t n = 0, old = 0;

        for (size_t i = 0; i < n_refs; i++) {
                const char *path = refs[i].key;

                if (n > 0 && streq(cgroups[n - 1].path, path))
                        continue; /* the same cgroup twice: the first one counts */

                while (old < s->n_cgroups && strcmp(s->cgroups[old].path, path) < 0)
                        cgroup_state_done(&s->cgroups[old++]);

                CgroupState *c = &cgroups[n];
                if (old < s->n_cgroups && streq(s->cgroups[old].path, path)) {
                        *c = s->cgroups[old];
                        s->cgroups[old++] = (CgroupState){};
                } else {
                        *c = (CgroupState){
                                .path = strdup(path),
                                .window_llc = -1,
                                .left = {.llc = -1},
                        };
                        if (!c->path) {
                                /* Half moved: forget everything rather than keep a
                                 * state that no longer matches what was set. */
                                for (size_t k = 0; k < n; k++)
                                        cgroup_state_done(&cgroups[k]);
                                policy_state_clear(s);
                                memset(ctx->by_sample, 0, snap->n_cgroups * sizeof(CgroupState *));
                                return -ENOMEM;
                        }
                }
                n++;
                c->sample = &snap->cgroups[refs[i].index];
                c->index = refs[i].index;
                c->acted = false;
                ctx->by_sample[refs[i].index] = c;
        }
        while (old < s->n_cgroups)
                cgroup_state_done(&s->cgroups[old++]);
        *ret_n = n;
        return 0;
}

/* Each thread's own affinity as of this tick (policy_thread_own_mask()). */
static int update_own_masks(CgroupState *c) {
        for (size_t k = 0; k < c->n_threads; k++) {
                ThreadState *t = &c->threads[k];
                if (!t->sample)
                        continue; /* not read this tick: as last seen */
                hwloc_const_bitmap_t own = policy_thread_own_mask(c, t, t->sample);
                if (own == t->own)
                        continue;
                /* Most threads' masks are as they were: no copy, and no
                 * allocation for the others (two a thread a tick before). */
                if (t->own && (hwloc_bitmap_isequal(own, t->own) || hwloc_bitmap_copy(t->own, own) >= 0))
                        continue;
                CpuSet copy = hwloc_bitmap_dup(own);
                if (!copy)
                        return -ENOMEM;
                hwloc_bitmap_free(t->own);
                t->own = copy;
        }
        return 0;
}

int policy_state_sync(PolicyCtx *ctx) {
        const Snapshot *snap = ctx->snap;
        PolicyState *s = ctx->state;
        _cleanup_(freep) SampleRef *refs = NULL;
        _cleanup_(freep) CgroupState *cgroups = NULL;
        size_t n;
        int r;

        ctx->by_sample = calloc(MAX(snap->n_cgroups, (size_t) 1), sizeof(CgroupState *));
        refs = calloc(MAX(snap->n_cgroups, (size_t) 1), sizeof(SampleRef));
        cgroups = calloc(MAX(snap->n_cgroups, (size_t) 1), sizeof(CgroupState));
        if (!ctx->by_sample || !refs || !cgroups)
                return -ENOMEM;

        r = carry_cgroups(ctx, refs, cgroup_refs(snap, refs), cgroups, &n);
        if (r < 0)
                return r;
        free(s->cgroups);
        s->cgroups = TAKE_PTR(cgroups);
        s->n_cgroups = n;

        for (size_t i = 0; i < n; i++) {
                CgroupState *c = &s->cgroups[i];
                r = c->sample->threads_partial ? sync_threads_partial(c) : sync_threads(c);
                if (r >= 0)
                        r = update_own_masks(&s->cgroups[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}
