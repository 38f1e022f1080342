/* SPDX-License-Identifier: MIT */
#include "policy-internal.h"

/* What stickiness decides on: the unit a thread would be pinned to, the
 * load on it without the pinned threads, and whether a thread talks (hands
 * work to a partner and waits for it), which decides whether it may be
 * pinned alone. A leaf: the sticky and pair policies and the guard use it. */

hwloc_const_bitmap_t policy_sticky_unit(const PolicyCtx *ctx, const ThreadSample *ts, CpuSet scratch,
                                        int *ret_unit) {
        const CpuSample *cpu;

        if (ts->cpu < 0)
                return NULL;
        cpu = snapshot_cpu(ctx->snap, (unsigned) ts->cpu);
        if (!cpu || !cpu->online || cpu->core < 0 || (size_t) cpu->core >= ctx->n_cores)
                return NULL;

        if (ctx->settings->sticky_scope == STICKY_SCOPE_CPU) {
                hwloc_bitmap_only(scratch, cpu->cpu);
                *ret_unit = (int) cpu->cpu;
                return scratch;
        }
        *ret_unit = cpu->core;
        return ctx->core_cpus[cpu->core];
}

hwloc_const_bitmap_t policy_pin_unit(const PolicyCtx *ctx, const ThreadState *t, CpuSet scratch) {
        if (t->pin_unit_cpu) {
                hwloc_bitmap_only(scratch, (unsigned) t->pin_unit);
                return scratch;
        }
        if (t->pin_unit >= 0 && (size_t) t->pin_unit < ctx->n_cores &&
            !hwloc_bitmap_iszero(ctx->core_cpus[t->pin_unit]))
                return ctx->core_cpus[t->pin_unit];
        return t->pin.mask;
}

static double share_on(hwloc_const_bitmap_t unit, const ThreadSample *ts) {
        return ts && ts->cpu >= 0 && hwloc_bitmap_isset(unit, (unsigned) ts->cpu) ? MAX(ts->util, 0.0) : 0.0;
}

void policy_sticky_unit_load(const PolicyCtx *ctx, hwloc_const_bitmap_t unit, const ThreadSample *ts,
                             const ThreadSample *partner, double *ret_others, double *ret_capacity) {
        double others = policy_mask_util(ctx, unit) - share_on(unit, ts) - share_on(unit, partner);

        *ret_others = MAX(others, 0.0);
        *ret_capacity = (double) hwloc_bitmap_weight(unit) * SCHED_CAPACITY_SCALE;
}

bool policy_thread_talks_at(const Settings *st, const ThreadSample *ts, double factor) {
        double threshold = st->sticky_pair_wakeups * factor;

        if (st->sticky_pair_wakeups <= 0 || ts->wakeups < 0 || ts->wakeups < threshold || ts->wakeups <= 0)
                return false;
        /* Many wakeups of long runs are a CPU-bound thread sharing its CPU
         * (preempted, scheduled in again), not one that hands work on. */
        double run_us = MAX(ts->util, 0.0) / SCHED_CAPACITY_SCALE * USEC_PER_SEC / ts->wakeups;
        return run_us <= PAIR_MAX_RUN_US;
}

bool policy_thread_talks(const Settings *st, const ThreadSample *ts) {
        return policy_thread_talks_at(st, ts, 1.0);
}

const ThreadState *policy_pair_partner(const CgroupState *c, const ThreadState *t) {
        if (!t->pair_tid)
                return NULL;
        const ThreadState *p = policy_cgroup_state_find_thread(c, t->pair_tid, t->pair_starttime);
        return p && p->sample && p->pair_tid == t->tid && p->pair_starttime == t->starttime ? p : NULL;
}

double policy_pair_progress(const CgroupState *c, const ThreadState *t) {
        const ThreadState *p = policy_pair_partner(c, t);
        double mine = MAX(t->sample->wakeups, 0.0);

        return mine + (p ? MAX(p->sample->wakeups, 0.0) : mine);
}

double policy_cgroup_progress(const Settings *st, const CgroupSample *cg) {
        double talk_util = 0, util = 0;
        unsigned talkers = 0;

        for (size_t i = 0; i < cg->n_threads; i++) {
                const ThreadSample *ts = &cg->threads[i];
                double u = MAX(ts->util, 0.0);

                util += u;
                if (policy_thread_talks(st, ts)) {
                        talkers++;
                        talk_util += u;
                }
        }
        if (talkers == 0 || talkers > WINDOW_PROGRESS_MAX_TALKERS || talk_util * 2 < util)
                return -1;
        return policy_cgroup_wakeups(cg);
}
