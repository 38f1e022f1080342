/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "policy-internal.h"

/* The consolidation window (DESIGN.md 1.5a, issue 14). Below overload the
 * kernel spreads a group's threads over idle CPUs; where they hand work to
 * each other (one runs, wakes the next and sleeps), every hand-over crosses
 * CPUs: a wakeup IPI, an idle exit, caches that are cold. On the 2-vCPU
 * development VM perf bench sched pipe took 52 us an op across its CPUs and
 * 6 us on one. So a latency cgroup whose demand fits in fewer cores than
 * it runs on gets a window of its demand even when its LLC is not busy.
 *
 * Who hands work, without tracing (the fallback where who wakes whom is
 * not sampled, and the rule where it is): many wakeups in all, short runs
 * per wakeup, and little run-queue wait (threads that wait need the CPUs
 * they have). Two busy threads are a pair's to pin (policy-pair.c); a
 * cgroup whose threads hold a pair's or a group's pins is placed finer
 * already. A timer thread looks the same (it wakes often and runs
 * briefly): a light cgroup gets no window at all (policy_demand_too_light())
 * and the guard judges the rest by their progress, their wakeups a second.
 * Where pairs (policy-pair.c) or groups that talk among themselves
 * (policy-group.c, from who wakes whom) are found, those place the threads
 * finer: two ping-pongs are two pairs on two cores, not one window. */

/* Its demand as measured, without WindowHeadroom: spread over cores,
 * threads that hand work on pay for every hand-over in their own runtime
 * (a wakeup sent across CPUs, caches that are cold), so together they need
 * less CPU than they used apart. Measured on the development VM: a token
 * ring of four threads used 840 across two CPUs at 128,000 hand-overs a
 * second, and 1,020 on one CPU at 333,000 (6.6 -> 3.1 us of CPU a
 * hand-over); with the headroom its window would be both CPUs. */
unsigned policy_consolidate_demand_cpus(double demand) {
        return (unsigned) ceil(MAX(demand, 0.0) / SCHED_CAPACITY_SCALE);
}

/* A pair's or a group's pins: those threads are placed finer than a window. */
static bool holds_talker_pins(const CgroupState *c) {
        for (size_t i = 0; i < c->sample->n_threads; i++) {
                const ThreadState *t = c->by_sample[i];
                if (t && t->pin.mask && (t->pair_tid || t->group_lead))
                        return true;
        }
        return false;
}

/* Cores of the domain (and their CPUs) and the cores that busy threads of
 * the cgroup last ran on. */
static void measure_spread(const PolicyCtx *ctx, const CgroupSample *cg, int dom_index, unsigned *ret_cores,
                           unsigned *ret_cpus, unsigned *ret_spread) {
        unsigned cores = 0, cpus = 0, spread = 0;

        for (size_t k = 0; k < ctx->n_cores; k++) {
                if (policy_core_domain(ctx, (int) k) != dom_index)
                        continue;
                cores++;
                cpus += (unsigned) hwloc_bitmap_weight(ctx->core_cpus[k]);
                for (size_t i = 0; i < cg->n_threads; i++) {
                        const ThreadSample *ts = &cg->threads[i];
                        if (ts->util >= CONSOLIDATE_BUSY_UTIL && ts->cpu >= 0 &&
                            hwloc_bitmap_isset(ctx->core_cpus[k], (unsigned) ts->cpu)) {
                                spread++;
                                break;
                        }
                }
        }
        *ret_cores = cores;
        *ret_cpus = cpus;
        *ret_spread = spread;
}

/* Pairs or groups that the pins place finer (a new window only). */
static int finer(const PolicyCtx *ctx, const CgroupState *c, const ConsolidateLook *l,
                 ConsolidateGate *ret) {
        bool found = false;
        int r;

        *ret = _CONSOLIDATE_MAX;
        if (ctx->settings->sticky_pair_wakeups <= 0)
                return 0; /* no pairs nor groups are pinned */
        if (l->busy == 2) {
                *ret = CONSOLIDATE_PAIR;
                return 0;
        }
        r = policy_pairs_found(ctx, c, &found);
        if (r < 0)
                return r;
        if (found) {
                *ret = CONSOLIDATE_PAIR;
                return 0;
        }
        r = policy_groups_apart(ctx, c, &found);
        if (r < 0)
                return r;
        if (found)
                *ret = CONSOLIDATE_GROUPS;
        return 0;
}

static int gate_of(const PolicyCtx *ctx, const CgroupState *c, const ConsolidateLook *l, bool held,
                   ConsolidateGate *ret) {
        /* A held window holds with half the wakeups and twice the run, so
         * that a group near a threshold does not flap. */
        double k = held ? 0.5 : 1.0;
        ConsolidateGate g = _CONSOLIDATE_MAX;
        int r;

        /* A held window stays while they hand work: pairs and groups found
         * later are pinned inside it (their placement keeps to the cgroup's
         * CPUs), where giving it back would widen the cpuset under their
         * pins (a 6.1 kernel resets every thread's mask then). */
        if (!ctx->settings->consolidate)
                g = CONSOLIDATE_OFF;
        else if (l->wakeups < CONSOLIDATE_MIN_WAKEUPS * k || l->run_us > PAIR_MAX_RUN_US / k)
                g = CONSOLIDATE_NO_HANDOFF;
        else if (held)
                g = CONSOLIDATE_HELD;
        else if (holds_talker_pins(c))
                g = CONSOLIDATE_PINNED;
        else if (l->wait_share > CONSOLIDATE_MAX_WAIT_SHARE)
                g = CONSOLIDATE_WAITS;
        else if (l->need >= l->spread)
                g = CONSOLIDATE_FITS_NOT;
        else {
                r = finer(ctx, c, l, &g);
                if (r < 0)
                        return r;
                if (g == _CONSOLIDATE_MAX)
                        g = CONSOLIDATE_CANDIDATE;
        }
        *ret = g;
        return 0;
}

int policy_consolidate_look(const PolicyCtx *ctx, const CgroupState *c, int dom_index, double demand,
                            bool held, ConsolidateLook *ret) {
        const CgroupSample *cg = c->sample;
        ConsolidateLook l = {};
        double util = 0, wait = 0;
        unsigned cores, cpus;

        for (size_t i = 0; i < cg->n_threads; i++) {
                const ThreadSample *ts = &cg->threads[i];
                util += MAX(ts->util, 0.0);
                wait += MAX(ts->wait, 0.0);
                l.wakeups += MAX(ts->wakeups, 0.0);
                l.busy += ts->util >= CONSOLIDATE_BUSY_UTIL;
        }
        measure_spread(ctx, cg, dom_index, &cores, &cpus, &l.spread);
        /* No wakeups known (older recordings): no hand-over seen. */
        l.run_us = l.wakeups > 0 ? util / SCHED_CAPACITY_SCALE * USEC_PER_SEC / l.wakeups : 0;
        l.wait_share = util > 0 ? wait / util : 0;
        double per_core = cores > 0 ? (double) cpus / cores : 1.0;
        l.need = (unsigned) ceil(policy_consolidate_demand_cpus(demand) / per_core);
        int r = gate_of(ctx, c, &l, held, &l.gate);
        if (r < 0)
                return r;
        *ret = l;
        return 0;
}
