/* SPDX-License-Identifier: MIT */
#include "policy-internal.h"

/* A pair of talking threads pinned together (issue 14, the part that needs
 * no tracing). Stickiness pins a quiet thread where it last ran; for a
 * thread that hands work to a partner and waits for it, that pins each end
 * of a ping-pong to its own CPU and every hand-over crosses CPUs (measured:
 * two processes over a pipe lost 29%). So a thread that talks
 * (policy_thread_talks()) is never pinned alone. When exactly two threads of
 * a cgroup talk, about equally often (each hand-over wakes one of them),
 * they are the pair (or two of one process, find_pairs()): both are
 * pinned to the unit of the one whose unit is quieter without them, if that
 * unit's util without them is at most StickyPairIdlePercent and their util
 * fits it. Not StickyIdlePercent: a ping-pong across two CPUs raises each
 * CPU's util beyond its threads' own
 * (measured here: CPUs at 650-750 with the two ends at 370-390 each, the
 * wakeups' cost on the CPUs that no thread's runtime holds), so a 5% gate
 * would never open for the pairs it is for. More talkers pair only as the
 * two of one process; the rest are a mesh (hackbench, messaging) that stays
 * where the kernel puts it.
 *
 * Together the wakee waits for the waker to finish its hand-over, so the
 * pair's wait rises by design and judges nothing: the guard judges a pair
 * pin by its progress, the pair's wakeups per second (one per hand-over),
 * and by its wait only when the progress did not rise (policy-guard.c). The
 * pin is released when the unit gets busy without the pair, when either
 * stops talking, and when either one's pin goes. */

/* The two talkers' rates agree within this share: a pair. */
#define PAIR_RATE_MATCH 0.75

typedef struct Pair {
        ThreadState *a, *b; /* a: the lower tid */
} Pair;

static bool rates_match(const ThreadState *x, const ThreadState *y) {
        double a = x->sample->wakeups, b = y->sample->wakeups;
        return MIN(a, b) >= PAIR_RATE_MATCH * MAX(a, b);
}

static Pair make_pair(ThreadState *x, ThreadState *y) {
        bool swap = y->tid < x->tid;
        return (Pair){.a = swap ? y : x, .b = swap ? x : y};
}

static int cmp_by_process(const void *x, const void *y) {
        const ThreadState *a = *(ThreadState *const *) x, *b = *(ThreadState *const *) y;
        if (a->sample->tgid != b->sample->tgid)
                return a->sample->tgid < b->sample->tgid ? -1 : 1;
        return (a->tid > b->tid) - (a->tid < b->tid);
}

/* Where the snapshot says who wakes whom, a pair is a group of two
 * (policy-group.c) at matching rates: two ping-pongs of one process are
 * two pairs, and two talkers that never wake each other none. */
static int pairs_by_partners(const PolicyCtx *ctx, const CgroupState *c, Pair **ret, size_t *ret_n) {
        ThreadGroup *g = NULL;
        size_t n = 0, n_pairs = 0;
        Pair *pairs = NULL;
        int r;

        r = policy_groups_find(ctx, c, &g, &n);
        if (r >= 0 && !(pairs = malloc(MAX(n, (size_t) 1) * sizeof(Pair))))
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n; i++)
                if (g[i].n == 2 && policy_thread_talks(ctx->settings, g[i].members[0]->sample) &&
                    policy_thread_talks(ctx->settings, g[i].members[1]->sample) &&
                    rates_match(g[i].members[0], g[i].members[1]))
                        pairs[n_pairs++] = make_pair(g[i].members[0], g[i].members[1]);
        policy_groups_free(g, n);
        if (r < 0)
                return r;
        *ret = pairs;
        *ret_n = n_pairs;
        return 0;
}

/* The pairs of a cgroup, into *ret (freed by the caller): its only two
 * talkers at matching rates, whichever processes they are; or, among more
 * talkers, the two of a process that has exactly two, at matching rates.
 * Threads of one process are the cheap signal of who talks to whom (the
 * kernel's cache-aware scheduling series groups by process, scx_lavd links
 * waker and wakee only within one process): two ping-pongs in two
 * processes are two pairs, three or more talkers of one process (hackbench,
 * messaging) a mesh that stays where the kernel puts it, and talkers whose
 * process is unknown pair with none. A quiet cgroup lists only the threads
 * steerd holds: it has no pair to find. */
static int find_pairs(const PolicyCtx *ctx, const CgroupState *c, Pair **ret, size_t *ret_n) {
        _cleanup_(freep) ThreadState **talk = NULL;
        _cleanup_(freep) Pair *pairs = NULL;
        size_t n = 0, n_pairs = 0;

        *ret = NULL;
        *ret_n = 0;
        if (c->sample->threads_partial || c->sample->n_threads < 2)
                return 0;
        talk = malloc(c->sample->n_threads * sizeof(ThreadState *));
        if (!talk)
                return -ENOMEM;
        for (size_t k = 0; k < c->sample->n_threads; k++) {
                ThreadState *t = c->by_sample[k];
                if (t && policy_thread_talks(ctx->settings, t->sample))
                        talk[n++] = t;
        }
        pairs = malloc(MAX(n / 2, (size_t) 1) * sizeof(Pair));
        if (!pairs)
                return -ENOMEM;
        if (policy_cgroup_has_partners(c))
                return pairs_by_partners(ctx, c, ret, ret_n);
        if (n == 2 && rates_match(talk[0], talk[1]))
                pairs[n_pairs++] = make_pair(talk[0], talk[1]);
        else if (n > 2) {
                qsort(talk, n, sizeof(ThreadState *), cmp_by_process);
                for (size_t i = 0, j; i < n; i = j) {
                        for (j = i + 1; j < n && talk[j]->sample->tgid == talk[i]->sample->tgid; j++)
                                ;
                        if (talk[i]->sample->tgid > 0 && j - i == 2 && rates_match(talk[i], talk[i + 1]))
                                pairs[n_pairs++] = make_pair(talk[i], talk[i + 1]);
                }
        }
        *ret = TAKE_PTR(pairs);
        *ret_n = n_pairs;
        return 0;
}

int policy_pairs_found(const PolicyCtx *ctx, const CgroupState *c, bool *ret) {
        _cleanup_(freep) Pair *pairs = NULL;
        size_t n = 0;
        int r = find_pairs(ctx, c, &pairs, &n);

        if (r < 0)
                return r;
        *ret = n > 0;
        return 0;
}

typedef struct PairUnit {
        hwloc_const_bitmap_t cpus;
        int unit;
        double others, capacity;
} PairUnit;

/* Whether the LLC of unit is overloaded without the pair's own util: a pair
 * is never pulled into an LLC that is overloaded already (the kernel
 * series' limit: grouping stops where the preferred LLC is overloaded), but
 * its own load, which goes where it goes, does not count. */
static bool llc_overloaded_without(const PolicyCtx *ctx, const Pair *p, hwloc_const_bitmap_t unit) {
        const CpuSample *cpu = snapshot_cpu(ctx->snap, (unsigned) hwloc_bitmap_first(unit));
        double others, capacity;

        if (!cpu || cpu->llc < 0 || (size_t) cpu->llc >= ctx->snap->n_llcs)
                return false;
        LlcSample l = ctx->snap->llcs[cpu->llc];
        if (l.weight == 0)
                return false;
        policy_sticky_unit_load(ctx, l.cpus, p->a->sample, p->b->sample, &others, &capacity);
        l.util = others / l.weight;
        l.nr_idle_scan = sis_nr_idle_scan(l.util, l.weight, SIS_IMBALANCE_PCT);
        return policy_llc_overloaded(&l);
}

/* The quieter of the two ends' units, without the pair's own util, in an
 * LLC that is not overloaded without it. A unit that took a pair this tick
 * takes no other: the snapshot does not show the first one's load there yet
 * (seen: two tbench pairs on two CPUs pinned in one tick to the same CPU). */
static bool choose_unit(const PolicyCtx *ctx, const Pair *p, hwloc_const_bitmap_t taken, CpuSet scratch_a,
                        CpuSet scratch_b, PairUnit *ret) {
        PairUnit u[2] = {};
        size_t n = 0;

        u[n].cpus = policy_sticky_unit(ctx, p->a->sample, scratch_a, &u[n].unit);
        n += u[n].cpus && !hwloc_bitmap_intersects(u[n].cpus, taken) &&
             !llc_overloaded_without(ctx, p, u[n].cpus);
        u[n].cpus = policy_sticky_unit(ctx, p->b->sample, scratch_b, &u[n].unit);
        n += u[n].cpus && !hwloc_bitmap_intersects(u[n].cpus, taken) &&
             !llc_overloaded_without(ctx, p, u[n].cpus);
        if (n == 0)
                return false;
        for (size_t i = 0; i < n; i++)
                policy_sticky_unit_load(ctx, u[i].cpus, p->a->sample, p->b->sample, &u[i].others,
                                        &u[i].capacity);
        *ret = n == 2 && u[1].others < u[0].others ? u[1] : u[0];
        return true;
}

/* The pin of one end: the unit within what it and its cgroup may use. */
static bool end_mask(const PolicyCtx *ctx, const CgroupState *c, const ThreadState *t,
                     hwloc_const_bitmap_t unit, CpuSet mask) {
        hwloc_bitmap_and(mask, unit, policy_thread_below_pin(t));
        hwloc_bitmap_and(mask, mask, policy_cgroup_effective(c));
        hwloc_bitmap_and(mask, mask, c->sample->allowed);
        hwloc_bitmap_and(mask, mask, ctx->online);
        return !hwloc_bitmap_iszero(mask);
}

/* Whether the pair may be pinned now; counts its streak. */
static bool pair_ready(PolicyCtx *ctx, CgroupState *c, const Pair *p, const PairUnit *u) {
        const Settings *st = ctx->settings;
        ThreadState *a = p->a, *b = p->b;
        bool quiet = u->others * 100 <= st->sticky_pair_idle_percent * u->capacity;

        if (!quiet) {
                a->pair_streak = 0;
                return false;
        }
        if (a->pair_seen_tid != b->tid)
                a->pair_streak = 0;
        a->pair_seen_tid = b->tid;
        a->pair_streak = MIN(a->pair_streak + 1, (unsigned) INT32_MAX);

        return !a->pin.mask && !b->pin.mask && !a->acted && !b->acted &&
               a->pair_streak >= MAX(st->sticky_ticks, 1u) &&
               MAX(a->sample->util, 0.0) + MAX(b->sample->util, 0.0) <= u->capacity &&
               !policy_backed_off(c, ACTION_POLICY_STICKY, ctx->now_us) && policy_thread_resident(ctx, a) &&
               policy_thread_resident(ctx, b);
}

/* The pair is judged once, on its lower tid's pin: the other end follows
 * it (a revert of one end lets the other go), and one revert backs the
 * cgroup off once. */
static void mark_end(ThreadState *t, const ThreadState *partner, const PairUnit *u, bool unit_cpu,
                     bool judged, double progress) {
        t->pin_unit = u->unit;
        t->pin_unit_cpu = unit_cpu;
        t->streak = 0;
        t->pair_tid = partner->tid;
        t->pair_starttime = partner->starttime;
        if (!judged) {
                t->pin.exp = (Experiment){};
                return;
        }
        t->pin.exp.by_progress = t->pin.exp.active;
        t->pin.exp.before_progress = progress;
}

/* Pins both ends on one unit; how many pins it set. */
static int pin_pair(PolicyCtx *ctx, CgroupState *c, const Pair *p, const PairUnit *u, CpuSet ma, CpuSet mb) {
        const Settings *st = ctx->settings;
        char buf[CPUSET_STRLEN], reason[512];
        int r, pins = 0;

        if (!end_mask(ctx, c, p->a, u->cpus, ma) || !end_mask(ctx, c, p->b, u->cpus, mb) ||
            !hwloc_bitmap_isequal(ma, mb))
                return 0;
        double progress = MAX(p->a->sample->wakeups, 0.0) + MAX(p->b->sample->wakeups, 0.0);
        ThreadState *ends[2][2] = {{p->a, p->b}, {p->b, p->a}};
        for (size_t i = 0; i < 2; i++) {
                ThreadState *t = ends[i][0], *o = ends[i][1];
                snprintf(reason, sizeof(reason),
                         "pair with tid %d: both talk (%.0f and %.0f wakeups/s >= %.0f), together on %s %s "
                         "whose util without them %.0f <= StickyPairIdlePercent %.0f%% of %.0f for %u "
                         "ticks; their util %.0f fits",
                         (int) o->tid, t->sample->wakeups, o->sample->wakeups, st->sticky_pair_wakeups,
                         st->sticky_scope == STICKY_SCOPE_CPU ? "cpu" : "core cpus",
                         cpuset_to_string(ma, buf, sizeof(buf)), u->others, st->sticky_pair_idle_percent,
                         u->capacity, p->a->pair_streak,
                         MAX(t->sample->util, 0.0) + MAX(o->sample->util, 0.0));
                r = policy_thread_set_layer(ctx, c, t, ACTION_POLICY_STICKY, ma, reason);
                if (r < 0)
                        return r;
                pins += r > 0;
        }
        /* Both or neither: one end pinned alone is let go at the next tick. */
        mark_end(p->a, p->b, u, st->sticky_scope == STICKY_SCOPE_CPU, true, progress);
        mark_end(p->b, p->a, u, st->sticky_scope == STICKY_SCOPE_CPU, false, progress);
        return pins;
}

/* The pairs of one cgroup that are ready, pinned; taken gathers the units
 * they took. */
static int pin_cgroup_pairs(PolicyCtx *ctx, CgroupState *c, unsigned budget, CpuSet scratch[4], CpuSet taken,
                            unsigned *pins) {
        _cleanup_(freep) Pair *pairs = NULL;
        size_t n_pairs;
        int r;

        r = find_pairs(ctx, c, &pairs, &n_pairs);
        if (r < 0)
                return r;
        for (size_t k = 0; k < n_pairs; k++) {
                PairUnit u;

                if (!choose_unit(ctx, &pairs[k], taken, scratch[0], scratch[1], &u) ||
                    !pair_ready(ctx, c, &pairs[k], &u) || *pins + 2 > budget)
                        continue;
                r = pin_pair(ctx, c, &pairs[k], &u, scratch[2], scratch[3]);
                if (r < 0)
                        return r;
                if (r > 0)
                        hwloc_bitmap_or(taken, taken, u.cpus);
                *pins += (unsigned) r;
        }
        return 0;
}

int policy_pair_pin(PolicyCtx *ctx, unsigned budget, unsigned *ret_pins) {
        _cleanup_cpuset_ CpuSet sa = hwloc_bitmap_alloc(), sb = hwloc_bitmap_alloc(),
                                ma = hwloc_bitmap_alloc(), mb = hwloc_bitmap_alloc(),
                                taken = hwloc_bitmap_alloc();
        unsigned pins = 0;
        int r;

        if (!sa || !sb || !ma || !mb || !taken)
                return -ENOMEM;
        CpuSet scratch[4] = {sa, sb, ma, mb};
        for (size_t i = 0; i < ctx->snap->n_cgroups && ctx->settings->sticky_pair_wakeups > 0; i++) {
                CgroupState *c = ctx->by_sample[i];

                if (!c || !policy_enabled(ctx->settings, c->sample->policy, ACTION_POLICY_STICKY))
                        continue;
                r = pin_cgroup_pairs(ctx, c, budget, scratch, taken, &pins);
                if (r < 0)
                        return r;
        }
        *ret_pins = pins;
        return 0;
}

/* A pair releases with the single pins' hysteresis above its own gate. */
static double pair_release_percent(const Settings *st) {
        return st->sticky_pair_idle_percent + MAX(st->sticky_release_percent - st->sticky_idle_percent, 0.0);
}

/* Why a held pair pin goes, or NULL while it holds. */
static const char *release_reason(PolicyCtx *ctx, const CgroupState *c, const ThreadState *t, CpuSet scratch,
                                  char *buf, size_t size) {
        const Settings *st = ctx->settings;
        const ThreadState *o = policy_pair_partner(c, t);
        char cpus[CPUSET_STRLEN];
        double others, capacity;

        if (!o || !o->pin.mask) {
                snprintf(buf, size, "its partner tid %d is not pinned with it any more", (int) t->pair_tid);
                return buf;
        }
        hwloc_const_bitmap_t unit = policy_pin_unit(ctx, t, scratch);
        policy_sticky_unit_load(ctx, unit, t->sample, o->sample, &others, &capacity);
        double limit = pair_release_percent(st);
        if (others * 100 > limit * capacity) {
                snprintf(buf, size, "pair with tid %d: %s util without them %.0f > %.0f%% of %.0f (%.0f)",
                         (int) o->tid, cpuset_to_string(unit, cpus, sizeof(cpus)), others, limit, capacity,
                         limit * capacity / 100);
                return buf;
        }
        if (!policy_thread_talks_at(st, t->sample, PAIR_HYSTERESIS) ||
            !policy_thread_talks_at(st, o->sample, PAIR_HYSTERESIS)) {
                snprintf(buf, size, "pair with tid %d stopped talking: %.0f and %.0f wakeups/s (< %.0f)",
                         (int) o->tid, t->sample->wakeups, o->sample->wakeups,
                         st->sticky_pair_wakeups * PAIR_HYSTERESIS);
                return buf;
        }
        return NULL;
}

int policy_pair_release(PolicyCtx *ctx) {
        _cleanup_cpuset_ CpuSet scratch = hwloc_bitmap_alloc();
        char buf[512];
        int r;

        if (!scratch)
                return -ENOMEM;
        for (size_t i = 0; i < ctx->snap->n_cgroups; i++) {
                CgroupState *c = ctx->by_sample[i];
                for (size_t k = 0; c && k < c->sample->n_threads; k++) {
                        ThreadState *t = c->by_sample[k];
                        if (!t || !t->pair_tid)
                                continue;
                        if (!t->pin.mask) {
                                t->pair_tid = 0; /* its pin went another way (guard, window, restore) */
                                continue;
                        }
                        if (t->acted)
                                continue;
                        const char *why = release_reason(ctx, c, t, scratch, buf, sizeof(buf));
                        if (!why)
                                continue;
                        r = policy_thread_restore(ctx, c, t, true, ACTION_POLICY_STICKY, why);
                        if (r < 0)
                                return r;
                        t->pair_tid = 0;
                }
        }
        return 0;
}
