/* SPDX-License-Identifier: MIT */
#include "policy-internal.h"

/* Prev-CPU stickiness (DESIGN.md 1.2). The kernel keeps a waking task on its
 * previous CPU when that CPU, without the task, is almost idle. steerd does it
 * with affinity: a thread whose previous core (or CPU, StickyScope=cpu) stays
 * at or below StickyIdlePercent of its capacity without the thread's own util
 * for StickyTicks ticks in a row is narrowed to that core. Pinning must never
 * make a thread wait, so the release is immediate and never rate-limited. */

int policy_sticky_release(PolicyCtx *ctx) {
        const Settings *st = ctx->settings;
        double wait_limit = st->sticky_max_wait_percent * SCHED_CAPACITY_SCALE / 100.0;
        _cleanup_cpuset_ CpuSet scratch = hwloc_bitmap_alloc();
        int r;

        if (!scratch)
                return -ENOMEM;
        for (size_t i = 0; i < ctx->snap->n_cgroups; i++) {
                CgroupState *c = ctx->by_sample[i];
                _cleanup_(freep) ThreadState **grouped = NULL;
                size_t n_grouped = 0;
                if (!c)
                        continue;
                r = policy_grouped_threads(ctx, c, &grouped, &n_grouped);
                if (r < 0)
                        return r;

                for (size_t k = 0; k < c->sample->n_threads; k++) {
                        ThreadState *t = c->by_sample[k];
                        char buf[CPUSET_STRLEN], reason[512];
                        double others, capacity;

                        /* A pair's pin is released with its partner (policy-pair.c),
                         * a group's with its group (policy-group-place.c). */
                        if (!t || t->acted || !t->pin.mask || t->pair_tid || t->group_lead)
                                continue;

                        hwloc_const_bitmap_t unit = policy_pin_unit(ctx, t, scratch);
                        policy_sticky_unit_load(ctx, unit, t->sample, NULL, &others, &capacity);
                        if (others * 100 > st->sticky_release_percent * capacity)
                                snprintf(reason, sizeof(reason),
                                         "%s %s util without the thread %.0f > %.0f%% of %.0f (%.0f)",
                                         t->pin_unit_cpu ? "cpu" : "core cpus",
                                         cpuset_to_string(unit, buf, sizeof(buf)), others,
                                         st->sticky_release_percent, capacity,
                                         st->sticky_release_percent * capacity / 100);
                        else if (t->sample->wait > wait_limit)
                                snprintf(reason, sizeof(reason), "wait %.0f > %.0f%% of %d (%.0f)",
                                         t->sample->wait, st->sticky_max_wait_percent, SCHED_CAPACITY_SCALE,
                                         wait_limit);
                        else if (policy_thread_talks_at(st, t->sample, 1.0 / PAIR_HYSTERESIS))
                                snprintf(reason, sizeof(reason),
                                         "it talks now (%.0f wakeups/s >= StickyPairWakeups %.0f / %.0f%%): "
                                         "pinned with its partner or not at all",
                                         t->sample->wakeups, st->sticky_pair_wakeups, PAIR_HYSTERESIS * 100);
                        else if (policy_grouped(grouped, n_grouped, t))
                                snprintf(reason, sizeof(reason),
                                         "it talks in a group (who wakes whom: %u partners in its cgroup): "
                                         "pinned with its group or not at all",
                                         t->sample->n_partners);
                        else
                                continue;

                        t->streak = 0;
                        t->sticky_released_us = ctx->now_us;
                        r = policy_thread_restore(ctx, c, t, true, ACTION_POLICY_STICKY, reason);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* A thread that may be pinned this tick, waiting for the tick's budget. */
typedef struct Candidate {
        CgroupState *c;
        ThreadState *t;
        size_t order; /* the snapshot's order */
} Candidate;

/* The streak of a thread (a quiet tick on its unit extends it); 1 when the
 * thread may be pinned now, with its unit in *ret_unit. */
static int pin_candidate(PolicyCtx *ctx, CgroupState *c, ThreadState *t, bool grouped, CpuSet scratch) {
        const Settings *st = ctx->settings;
        const ThreadSample *ts = t->sample;
        double wait_limit = st->sticky_max_wait_percent * SCHED_CAPACITY_SCALE / 100.0;
        double others, capacity;
        hwloc_const_bitmap_t unit;
        int u = -1;

        unit = policy_sticky_unit(ctx, ts, scratch, &u);
        if (!unit) {
                t->streak = 0;
                return 0;
        }
        policy_sticky_unit_load(ctx, unit, ts, NULL, &others, &capacity);
        if (others * 100 <= st->sticky_idle_percent * capacity && ts->wait <= wait_limit) {
                t->streak = t->streak_unit == u ? MIN(t->streak + 1, (unsigned) INT32_MAX) : 1;
                t->streak_unit = u;
        } else {
                t->streak = 0;
                return 0;
        }

        /* A pin pays on the thread's wakeups: one that is scheduled in less
         * than StickyMinWakeups times a second (a sleeper) gains nothing a
         * syscall is worth. Unknown (older recordings): no filter. */
        if (ts->wakeups >= 0 && ts->wakeups < st->sticky_min_wakeups)
                return 0;
        /* A thread that talks is pinned with its partner or not at all:
         * alone, every wakeup of its partner would cross CPUs (measured: a
         * ping-pong of two processes, each end pinned where it last ran,
         * lost 29% of its throughput). policy_pair_pin() decides those. */
        if (policy_thread_talks(st, ts))
                return 0;
        /* The same for a thread of a group that who wakes whom found,
         * however rarely it wakes: the two rings of the guest check, each
         * thread woken a few hundred times a second under TCG, were pinned
         * one by one where they last ran and so never placed as groups. */
        if (grouped || policy_grouped_recently(ctx, t))
                return 0;
        /* Nor one whose groups are not known yet: who wakes whom is about
         * to say (sampler-wake.c), and a pin alone now may split a group
         * that is found a second later. */
        if (ts->wake_unknown)
                return 0;
        if (t->sticky_released_us > 0 && ctx->now_us >= t->sticky_released_us &&
            ctx->now_us - t->sticky_released_us < STICKY_REPIN_HOLD_US)
                return 0;
        if (t->pin.mask || t->acted || t->streak < MAX(st->sticky_ticks, 1u) ||
            policy_backed_off(c, ACTION_POLICY_STICKY, ctx->now_us) || !policy_thread_resident(ctx, t))
                return 0;
        return 1;
}

static int pin_one(PolicyCtx *ctx, const Candidate *k, CpuSet scratch, CpuSet mask) {
        const Settings *st = ctx->settings;
        CgroupState *c = k->c;
        ThreadState *t = k->t;
        const ThreadSample *ts = t->sample;
        double wait_limit = st->sticky_max_wait_percent * SCHED_CAPACITY_SCALE / 100.0;
        double others, capacity;
        hwloc_const_bitmap_t unit;
        char reason[512];
        int u = -1;

        unit = policy_sticky_unit(ctx, ts, scratch, &u);
        if (!unit)
                return 0;
        policy_sticky_unit_load(ctx, unit, ts, NULL, &others, &capacity);
        hwloc_bitmap_and(mask, unit, policy_thread_below_pin(t));
        hwloc_bitmap_and(mask, mask, policy_cgroup_effective(c));
        hwloc_bitmap_and(mask, mask, c->sample->allowed);
        hwloc_bitmap_and(mask, mask, ctx->online);
        if (hwloc_bitmap_iszero(mask))
                return 0;
        /* Already that narrow: nothing to do, nothing to judge. */
        hwloc_bitmap_and(scratch, policy_thread_effective(t), ctx->online);
        if (hwloc_bitmap_isincluded(scratch, mask))
                return 0;

        snprintf(reason, sizeof(reason),
                 "cpu %d %s util without the thread %.0f <= %.0f%% of %.0f (%.0f) for %u ticks; wait %.0f "
                 "<= %.0f",
                 ts->cpu, st->sticky_scope == STICKY_SCOPE_CPU ? "cpu" : "core", others,
                 st->sticky_idle_percent, capacity, st->sticky_idle_percent * capacity / 100, t->streak,
                 ts->wait, wait_limit);
        int r = policy_thread_set_layer(ctx, c, t, ACTION_POLICY_STICKY, mask, reason);
        if (r > 0) {
                t->pin_unit = u;
                t->pin_unit_cpu = st->sticky_scope == STICKY_SCOPE_CPU;
                t->pair_tid = 0;
                t->group_lead = 0;
        }
        return r;
}

static int order_cmp(const void *a, const void *b) {
        const Candidate *x = a, *y = b;
        return (x->order > y->order) - (x->order < y->order);
}

/* The longest streak first (it has waited longest: no thread starves), then
 * the one that wakes most often (it gains most), then the snapshot's order. */
static int candidate_cmp(const void *a, const void *b) {
        const Candidate *x = a, *y = b;
        if (x->t->streak != y->t->streak)
                return x->t->streak > y->t->streak ? -1 : 1;
        double wx = x->t->sample->wakeups, wy = y->t->sample->wakeups;
        if (wx != wy)
                return wx > wy ? -1 : 1;
        return order_cmp(a, b);
}

/* Every thread's streak, then the candidates of the tick: at most
 * StickyMaxPinsPerTick pins, so that a tick where every quiet thread
 * qualifies at once (a fixture, a host going idle) is spread over the next
 * ticks instead of costing as much as all of them. */
static int collect_candidates(PolicyCtx *ctx, CpuSet scratch, Candidate **ret, size_t *ret_n) {
        _cleanup_(freep) Candidate *cands = NULL;
        size_t n = 0, alloc = 0, order = 0;

        for (size_t i = 0; i < ctx->snap->n_cgroups; i++) {
                CgroupState *c = ctx->by_sample[i];
                _cleanup_(freep) ThreadState **grouped = NULL;
                size_t n_grouped = 0;
                if (!c)
                        continue;
                bool enabled = policy_enabled(ctx->settings, c->sample->policy, ACTION_POLICY_STICKY);
                if (enabled) {
                        int r = policy_grouped_threads(ctx, c, &grouped, &n_grouped);
                        if (r < 0)
                                return r;
                }

                for (size_t k = 0; k < c->sample->n_threads; k++, order++) {
                        ThreadState *t = c->by_sample[k];
                        if (!t)
                                continue;
                        if (!enabled) {
                                t->streak = 0;
                                continue;
                        }
                        if (pin_candidate(ctx, c, t, policy_grouped(grouped, n_grouped, t), scratch) <= 0)
                                continue;
                        if (n == alloc) {
                                alloc = alloc ? alloc * 2 : 64;
                                Candidate *p = realloc(cands, alloc * sizeof(Candidate));
                                if (!p)
                                        return -ENOMEM;
                                cands = p;
                        }
                        cands[n++] = (Candidate){.c = c, .t = t, .order = order};
                }
        }
        *ret = TAKE_PTR(cands);
        *ret_n = n;
        return 0;
}

int policy_sticky_pin(PolicyCtx *ctx) {
        _cleanup_cpuset_ CpuSet scratch = hwloc_bitmap_alloc(), mask = hwloc_bitmap_alloc();
        _cleanup_(freep) Candidate *cands = NULL;
        unsigned pins = 0, pair_pins = 0;
        size_t n;
        int r;

        if (!scratch || !mask)
                return -ENOMEM;
        /* Groups and pairs first: each is a pin that pays on all its
         * threads. A group is placed whole: one may take the tick's budget
         * (hackbench's groups are 40 threads). */
        size_t budget = MAX(ctx->settings->sticky_max_pins, 1u);
        unsigned group_pins = 0;
        r = policy_group_pin(ctx, (unsigned) budget, &group_pins);
        if (r < 0)
                return r;
        budget -= MIN((size_t) group_pins, budget);
        r = policy_pair_pin(ctx, (unsigned) budget, &pair_pins);
        if (r < 0)
                return r;
        r = collect_candidates(ctx, scratch, &cands, &n);
        if (r < 0)
                return r;
        /* Over budget: the first by candidate_cmp() get their turn. The
         * plan lists them in the snapshot's order either way. A candidate
         * that turns out to need no pin (already that narrow) leaves its
         * turn to the next. */
        budget -= MIN((size_t) pair_pins, budget);
        if (n > budget) {
                qsort(cands, n, sizeof(Candidate), candidate_cmp);
                qsort(cands, budget, sizeof(Candidate), order_cmp);
        }
        for (size_t i = 0; i < n && pins < budget; i++) {
                r = pin_one(ctx, &cands[i], scratch, mask);
                if (r < 0)
                        return r;
                pins += r > 0;
        }
        return 0;
}
