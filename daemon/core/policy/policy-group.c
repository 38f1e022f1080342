/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "policy-internal.h"

/* Groups of threads that talk among themselves (issue 14, with the
 * signal): the threads of a cgroup linked where the sampler saw one wake
 * the other (ThreadSample.partners, sampled sched_waking) often enough,
 * as long as they wake at all (GROUP_STOP_WAKEUPS). The partners hold
 * from one observation to the next, so a group holds with them; this
 * tick's wakeups would not do (hackbench's threads on two saturated CPUs
 * swing between 20 and 300 a second from tick to tick, for runs of about
 * 100 us: no talker threshold). A group of two
 * talkers (policy_thread_talks()) is a pair (policy-pair.c). Groups of three or more are placed when a
 * cgroup has two or more groups: each on the fewest whole cores whose room holds its util, in one LLC, the
 * groups balanced over the cgroup's cores by util, largest first (hackbench -g 4 in one process: two groups
 * per CPU on two CPUs, the placement that ran 30% faster by hand). A single group is a mesh that stays where
 * the kernel puts it: it is never squeezed (perf bench messaging's 40 threads on one CPU ran 23% slower).
 * The kernel series' lessons hold: a group is never placed below its util, nor into an LLC overloaded
 * without it. The guard judges a group by its progress (its wakeups per second), on its lead (lowest tid); a
 * revert lets the whole group go and backs the cgroup's pins off. */

/* An edge links two talkers when it carries at least this share of the
 * quieter one's wakeups: a hackbench thread talks to 20 others (5% each),
 * one sample at period 16 of a thread woken 1000 times a second is 1.6%. */
#define GROUP_EDGE_SHARE 0.02

static int cmp_tid(const void *x, const void *y) {
        const ThreadState *a = *(ThreadState *const *) x, *b = *(ThreadState *const *) y;
        return (a->tid > b->tid) - (a->tid < b->tid);
}

static size_t uf_find(size_t *parent, size_t i) {
        while (parent[i] != i)
                i = parent[i] = parent[parent[i]];
        return i;
}

static ssize_t talker_index(ThreadState *const *talk, size_t n, pid_t tid) {
        size_t lo = 0, hi = n;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (talk[mid]->tid == tid)
                        return (ssize_t) mid;
                if (talk[mid]->tid < tid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return -1;
}

static void link_partners(ThreadState *const *talk, size_t n, size_t *parent) {
        for (size_t i = 0; i < n; i++) {
                const ThreadSample *ts = talk[i]->sample;
                for (unsigned k = 0; k < ts->n_partners; k++) {
                        ssize_t j = talker_index(talk, n, ts->partners[k].tid);
                        if (j < 0)
                                continue;
                        double quieter = MIN(ts->wakeups, talk[j]->sample->wakeups);
                        if (ts->partners[k].rate < GROUP_EDGE_SHARE * quieter)
                                continue;
                        size_t a = uf_find(parent, i), b = uf_find(parent, (size_t) j);
                        if (a != b)
                                parent[MAX(a, b)] = MIN(a, b);
                }
        }
}

void policy_groups_free(ThreadGroup *g, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(g[i].members);
        free(g);
}

bool policy_cgroup_has_partners(const CgroupState *c) {
        for (size_t k = 0; k < c->sample->n_threads; k++)
                if (c->sample->threads[k].n_partners > 0)
                        return true;
        return false;
}

/* Components of two or more talkers into *ret, each sorted by tid (the
 * first is the lead), the groups by their lead. */
static int groups_collect(ThreadState **talk, size_t n, size_t *parent, ThreadGroup **ret, size_t *ret_n) {
        ThreadGroup *g = calloc(MAX(n / 2, (size_t) 1), sizeof(ThreadGroup));
        size_t n_groups = 0;

        if (!g)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (uf_find(parent, i) != i)
                        continue;
                size_t size = 0;
                for (size_t j = i; j < n; j++)
                        size += uf_find(parent, j) == i;
                if (size < 2)
                        continue;
                ThreadGroup *x = &g[n_groups++];
                x->members = malloc(size * sizeof(ThreadState *));
                if (!x->members) {
                        policy_groups_free(g, n_groups);
                        return -ENOMEM;
                }
                for (size_t j = i; j < n; j++)
                        if (uf_find(parent, j) == i) {
                                x->members[x->n++] = talk[j];
                                x->util += MAX(talk[j]->sample->util, 0.0);
                                x->wakeups += MAX(talk[j]->sample->wakeups, 0.0);
                        }
        }
        *ret = g;
        *ret_n = n_groups;
        return 0;
}

int policy_groups_find(const PolicyCtx *ctx, const CgroupState *c, ThreadGroup **ret, size_t *ret_n) {
        _cleanup_(freep) ThreadState **talk = NULL;
        _cleanup_(freep) size_t *parent = NULL;
        size_t n = 0;

        *ret = NULL;
        *ret_n = 0;
        if (c->sample->threads_partial || c->sample->n_threads < 2 || !policy_cgroup_has_partners(c))
                return 0;
        talk = malloc(c->sample->n_threads * sizeof(ThreadState *));
        parent = malloc(c->sample->n_threads * sizeof(size_t));
        if (!talk || !parent)
                return -ENOMEM;
        for (size_t k = 0; k < c->sample->n_threads; k++) {
                ThreadState *t = c->by_sample[k];
                if (t && t->sample->n_partners > 0 && t->sample->wakeups >= GROUP_STOP_WAKEUPS)
                        talk[n++] = t;
        }
        qsort(talk, n, sizeof(ThreadState *), cmp_tid);
        for (size_t i = 0; i < n; i++)
                parent[i] = i;
        link_partners(talk, n, parent);
        return groups_collect(talk, n, parent, ret, ret_n);
}

static int cmp_address(const void *x, const void *y) {
        uintptr_t a = (uintptr_t) *(ThreadState *const *) x, b = (uintptr_t) *(ThreadState *const *) y;
        return (a > b) - (a < b);
}

int policy_grouped_threads(const PolicyCtx *ctx, const CgroupState *c, ThreadState ***ret, size_t *ret_n) {
        ThreadGroup *g = NULL;
        size_t n = 0, total = 0;
        int r = policy_groups_find(ctx, c, &g, &n);

        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                total += g[i].n;
        ThreadState **set = NULL;
        if (total > 0) {
                set = malloc(total * sizeof(ThreadState *));
                if (!set) {
                        policy_groups_free(g, n);
                        return -ENOMEM;
                }
                total = 0;
                for (size_t i = 0; i < n; i++)
                        for (size_t k = 0; k < g[i].n; k++) {
                                g[i].members[k]->grouped_us = ctx->now_us;
                                set[total++] = g[i].members[k];
                        }
                qsort(set, total, sizeof(ThreadState *), cmp_address);
        }
        policy_groups_free(g, n);
        *ret = set;
        *ret_n = total;
        return 0;
}

bool policy_grouped(ThreadState *const *set, size_t n, const ThreadState *t) {
        return n > 0 && bsearch(&t, set, n, sizeof(ThreadState *), cmp_address);
}

bool policy_grouped_recently(const PolicyCtx *ctx, const ThreadState *t) {
        return t->grouped_us > 0 && ctx->now_us >= t->grouped_us &&
               ctx->now_us - t->grouped_us < GROUP_MEMORY_US;
}

int policy_groups_apart(const PolicyCtx *ctx, const CgroupState *c, bool *ret) {
        ThreadGroup *g = NULL;
        size_t n = 0, big = 0;
        int r = policy_groups_find(ctx, c, &g, &n);

        for (size_t i = 0; r >= 0 && i < n; i++)
                big += g[i].n >= 3;
        policy_groups_free(g, n);
        if (r < 0)
                return r;
        *ret = n >= 2 && big > 0;
        return 0;
}

void policy_group_load(const CgroupState *c, const ThreadState *lead, double *ret_wait, double *ret_util) {
        double wait = 0, util = 0;

        for (size_t k = 0; k < c->sample->n_threads; k++) {
                const ThreadState *t = c->by_sample[k];
                if (t && t->group_lead == lead->tid && t->group_lead_starttime == lead->starttime &&
                    t->pin.mask) {
                        wait += MAX(t->sample->wait, 0.0);
                        util += MAX(t->sample->util, 0.0);
                }
        }
        *ret_wait = wait;
        *ret_util = util;
}
