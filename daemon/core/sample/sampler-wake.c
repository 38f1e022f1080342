/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "log.h"
#include "sampler-internal.h"

/* Who wakes whom (issue 14): observed only where it decides something, a
 * latency cgroup whose threads wake each other often (wake_needed()), for
 * SAMPLER_WAKE_OBSERVE_US, then held for SAMPLER_WAKE_HOLD_US: an open
 * event costs every wakeup of the host, steerd's cgroups or not
 * (wake-events.h). The result is each thread's busiest partners in its own
 * cgroup, in every snapshot until the next observation. */

typedef struct MemberKey {
        pid_t tid;
        unsigned cgroup;
} MemberKey;

typedef struct DrainCtx {
        Sampler *s;
        const MemberKey *members;
        size_t n_members;
        int r;
} DrainCtx;

static int cmp_member(const void *a, const void *b) {
        pid_t x = ((const MemberKey *) a)->tid, y = ((const MemberKey *) b)->tid;
        return (x > y) - (x < y);
}

static const MemberKey *member_find(const DrainCtx *d, pid_t tid) {
        MemberKey key = {.tid = tid};
        return bsearch(&key, d->members, d->n_members, sizeof(MemberKey), cmp_member);
}

static void on_wake(pid_t waker, pid_t wakee, void *userdata) {
        DrainCtx *d = userdata;
        Sampler *s = d->s;

        if (d->r < 0 || waker == wakee)
                return;
        const MemberKey *a = member_find(d, waker), *b = member_find(d, wakee);
        if (!a || !b || a->cgroup != b->cgroup)
                return;
        if (s->n_wake_edges == s->alloc_wake_edges) {
                size_t n = MAX(s->alloc_wake_edges * 2, (size_t) 1024);
                WakeEdge *e = realloc(s->wake_edges, n * sizeof(WakeEdge));
                if (!e) {
                        d->r = -ENOMEM;
                        return;
                }
                s->wake_edges = e;
                s->alloc_wake_edges = n;
        }
        s->wake_edges[s->n_wake_edges++] = (WakeEdge){.a = MIN(waker, wakee), .b = MAX(waker, wakee)};
}

static bool cgroup_observed(const Sampler *s, const CgroupSample *c) {
        return s->wake_wanted && c->policy == CGROUP_POLICY_LATENCY && !c->threads_partial;
}

/* The observed cgroups' wakeups per second, or 0 when none has three or
 * more threads that wake (GROUP_MIN_WAKEUPS) and, together, wake at least
 * three times StickyPairWakeups: who wakes whom decides nothing there (two
 * talkers are a pair without it). hackbench's threads on two saturated
 * CPUs are woken about 100 times a second each, 17,000 in all. */
static double cgroup_wakes(const Sampler *s, const CgroupSample *c) {
        unsigned waking = 0;
        double sum = 0;

        if (!s->settings.wake_groups || s->settings.sticky_pair_wakeups <= 0 || !cgroup_observed(s, c))
                return 0;
        for (size_t k = 0; k < c->n_threads; k++) {
                waking += c->threads[k].wakeups >= GROUP_MIN_WAKEUPS;
                sum += MAX(c->threads[k].wakeups, 0.0);
        }
        return waking >= 3 && sum >= 3 * s->settings.sticky_pair_wakeups ? sum : 0;
}

static double wake_needed(const Sampler *s, const Snapshot *snap) {
        double total = 0;

        for (size_t i = 0; i < snap->n_cgroups; i++)
                total += cgroup_wakes(s, &snap->cgroups[i]);
        return total;
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return (x > y) - (x < y);
}

/* The threads of a cgroup that will be observed and that no finished
 * observation covered: what they are to each other is not known yet, and
 * a pin of one of them alone now could split a group found a second later
 * (the guest's rings: sticky pinned three ring threads one by one in the
 * second before the first observation ended, then gave them back for the
 * groups). Not while observing is unavailable: nothing will be known. */
static void mark_unknown(const Sampler *s, Snapshot *snap) {
        if (s->wake_off)
                return;
        for (size_t i = 0; i < snap->n_cgroups; i++) {
                CgroupSample *c = &snap->cgroups[i];
                if (cgroup_wakes(s, c) <= 0)
                        continue;
                for (size_t k = 0; k < c->n_threads; k++) {
                        ThreadSample *t = &c->threads[k];
                        t->wake_unknown = !bsearch(&t->tid, s->wake_known, s->n_wake_known, sizeof(pid_t),
                                                   cmp_pid);
                }
        }
}

static int remember_known(Sampler *s, const MemberKey *members, size_t n) {
        pid_t *k = malloc(MAX(n, (size_t) 1) * sizeof(pid_t));
        if (!k)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                k[i] = members[i].tid; /* sorted by tid, as members_build() left them */
        free(s->wake_known);
        s->wake_known = k;
        s->n_wake_known = n;
        return 0;
}

/* Every period-th wakeup: about SAMPLER_WAKE_SAMPLES a second of the
 * observed cgroups', a power of two up to SAMPLER_WAKE_MAX_PERIOD. */
static unsigned wake_period(double wakeups) {
        unsigned p = 1;
        while (p < SAMPLER_WAKE_MAX_PERIOD && wakeups / p > SAMPLER_WAKE_SAMPLES)
                p *= 2;
        return p;
}

static int members_build(const Sampler *s, const Snapshot *snap, MemberKey **ret, size_t *ret_n) {
        size_t n = 0;

        for (size_t i = 0; i < snap->n_cgroups; i++)
                n += cgroup_observed(s, &snap->cgroups[i]) ? snap->cgroups[i].n_threads : 0;
        MemberKey *m = malloc(MAX(n, (size_t) 1) * sizeof(MemberKey));
        if (!m)
                return -ENOMEM;
        n = 0;
        for (size_t i = 0; i < snap->n_cgroups; i++)
                for (size_t k = 0; cgroup_observed(s, &snap->cgroups[i]) && k < snap->cgroups[i].n_threads;
                     k++)
                        m[n++] = (MemberKey){.tid = snap->cgroups[i].threads[k].tid, .cgroup = (unsigned) i};
        qsort(m, n, sizeof(MemberKey), cmp_member);
        *ret = m;
        *ret_n = n;
        return 0;
}

static int cmp_edge(const void *x, const void *y) {
        const WakeEdge *a = x, *b = y;
        if (a->a != b->a)
                return a->a < b->a ? -1 : 1;
        return (a->b > b->b) - (a->b < b->b);
}

typedef struct Directed {
        pid_t from, to;
        size_t count;
} Directed;

static int cmp_directed(const void *x, const void *y) {
        const Directed *a = x, *b = y;
        if (a->from != b->from)
                return a->from < b->from ? -1 : 1;
        if (a->count != b->count)
                return a->count > b->count ? -1 : 1;
        return (a->to > b->to) - (a->to < b->to);
}

/* The observation's samples into each thread's busiest partners. */
static int partners_build(Sampler *s, uint64_t observed_us, unsigned period) {
        _cleanup_(freep) Directed *d = NULL;
        size_t n = 0;

        qsort(s->wake_edges, s->n_wake_edges, sizeof(WakeEdge), cmp_edge);
        d = malloc(MAX(s->n_wake_edges * 2, (size_t) 1) * sizeof(Directed));
        if (!d)
                return -ENOMEM;
        for (size_t i = 0, j; i < s->n_wake_edges; i = j) {
                for (j = i + 1; j < s->n_wake_edges && !cmp_edge(&s->wake_edges[i], &s->wake_edges[j]); j++)
                        ;
                if (j - i < SAMPLER_WAKE_MIN_SAMPLES)
                        continue;
                d[n++] = (Directed){s->wake_edges[i].a, s->wake_edges[i].b, j - i};
                d[n++] = (Directed){s->wake_edges[i].b, s->wake_edges[i].a, j - i};
        }
        qsort(d, n, sizeof(Directed), cmp_directed);

        free(s->partners);
        s->partners = NULL;
        s->n_partners = 0;
        s->partners = malloc(MAX(n, (size_t) 1) * sizeof(ThreadPartners));
        if (!s->partners)
                return -ENOMEM;
        double scale = (double) period * USEC_PER_SEC / (double) MAX(observed_us, (uint64_t) 1);
        for (size_t i = 0, j; i < n; i = j) {
                ThreadPartners *p = &s->partners[s->n_partners++];
                *p = (ThreadPartners){.tid = d[i].from};
                for (j = i; j < n && d[j].from == d[i].from; j++)
                        if (p->n < SNAPSHOT_MAX_PARTNERS)
                                p->p[p->n++] =
                                        (WakePartner){.tid = d[j].to, .rate = (double) d[j].count * scale};
        }
        s->n_wake_edges = 0;
        return 0;
}

static int cmp_partners(const void *a, const void *b) {
        pid_t x = ((const ThreadPartners *) a)->tid, y = ((const ThreadPartners *) b)->tid;
        return (x > y) - (x < y);
}

static void partners_attach(const Sampler *s, Snapshot *snap) {
        for (size_t i = 0; i < snap->n_cgroups && s->n_partners > 0; i++) {
                CgroupSample *c = &snap->cgroups[i];
                for (size_t k = 0; cgroup_observed(s, c) && k < c->n_threads; k++) {
                        ThreadSample *t = &c->threads[k];
                        ThreadPartners key = {.tid = t->tid};
                        const ThreadPartners *p = bsearch(&key, s->partners, s->n_partners,
                                                          sizeof(ThreadPartners), cmp_partners);
                        if (!p)
                                continue;
                        memcpy(t->partners, p->p, sizeof(t->partners));
                        t->n_partners = p->n;
                }
        }
}

static void wake_stop(Sampler *s) {
        s->wake = wake_events_close(s->wake);
        s->n_wake_edges = 0;
}

void sampler_wake_done(Sampler *s) {
        wake_stop(s);
        free(s->wake_edges);
        free(s->partners);
        free(s->wake_known);
        s->wake_edges = NULL;
        s->partners = NULL;
        s->wake_known = NULL;
        s->n_partners = s->alloc_wake_edges = s->n_wake_known = 0;
}

static void wake_start(Sampler *s, const Snapshot *snap, uint64_t now_us, double wakeups) {
        _cleanup_cpuset_ CpuSet online = NULL;
        char why[512] = "";

        if (snapshot_online_cpus(snap, &online) < 0)
                return;
        int r = wake_events_open(s->root, online, wake_period(wakeups), &s->wake, why, sizeof(why));
        if (r < 0) {
                /* Said once: pairs are then found without it (by process). */
                log_notice("Not sampling who wakes whom: %s; talking threads are paired by process only",
                           why);
                snprintf(s->wake_status, sizeof(s->wake_status), "unavailable: %s", why);
                s->wake_off = true;
                return;
        }
        s->wake_start_us = now_us;
        s->n_wake_edges = 0;
}

int sampler_wake_sample(Sampler *s, uint64_t now_us, Snapshot *snap) {
        _cleanup_(freep) MemberKey *members = NULL;
        int r;

        double wakeups = wake_needed(s, snap);
        if (wakeups <= 0) {
                wake_stop(s);
                /* What was seen holds as long as an observation would: a
                 * cgroup that dips under the threshold for a tick keeps its
                 * groups (no release and re-placement by turns). */
                if (now_us >= s->wake_next_us)
                        s->n_partners = 0;
                return 0;
        }
        if (!s->wake && !s->wake_off && now_us >= s->wake_next_us)
                wake_start(s, snap, now_us, wakeups);
        if (s->wake) {
                DrainCtx d = {.s = s};
                uint64_t lost = 0;
                r = members_build(s, snap, &members, &d.n_members);
                if (r < 0)
                        return r;
                d.members = members;
                r = wake_events_drain(s->wake, on_wake, &d, &lost);
                if (r >= 0)
                        r = d.r;
                if (r < 0)
                        return r;
                uint64_t spent = now_us - MIN(now_us, s->wake_start_us);
                bool enough = spent >= SAMPLER_WAKE_MIN_OBSERVE_US &&
                              s->n_wake_edges >= SAMPLER_WAKE_ENOUGH_SAMPLES * d.n_members;
                if (spent >= SAMPLER_WAKE_OBSERVE_US || enough) {
                        r = partners_build(s, now_us - s->wake_start_us, wake_events_period(s->wake));
                        if (r >= 0)
                                r = remember_known(s, members, d.n_members);
                        if (r < 0)
                                return r;
                        wake_stop(s);
                        s->wake_next_us = now_us + SAMPLER_WAKE_HOLD_US;
                }
        }
        partners_attach(s, snap);
        mark_unknown(s, snap);
        return 0;
}

void sampler_set_wake_wanted(Sampler *s, bool wanted) {
        s->wake_wanted = wanted;
}

const char *sampler_wake_status(const Sampler *s) {
        if (!s->settings.wake_groups)
                return "off";
        if (s->wake_off)
                return s->wake_status;
        if (s->wake)
                return "observing";
        return s->n_partners > 0 ? "held" : "idle";
}
