/* SPDX-License-Identifier: MIT */
/* The questions both the policies and the checker ask, in a leaf file that
 * calls no other file of the engine: the checker must not depend on the code
 * it checks, and the code it checks must ask exactly what it asks. */

#include <math.h>

#include "policy-internal.h"

bool policy_enabled(const Settings *settings, CgroupPolicy cgroup_policy, ActionPolicy policy) {
        switch (settings->mode) {
        case MODE_OBSERVE:
        case MODE_LATENCY:
                if (policy == ACTION_POLICY_BALANCE)
                        return true;
                return cgroup_policy == CGROUP_POLICY_LATENCY &&
                       (policy == ACTION_POLICY_WINDOW || policy == ACTION_POLICY_STICKY);
        case MODE_BALANCED:
                return policy == ACTION_POLICY_BALANCE;
        default:
                return false;
        }
}

uint64_t policy_residency_us(const Settings *settings) {
        return settings->min_residency_ms * USEC_PER_MSEC;
}

bool policy_thread_resident(const PolicyCtx *ctx, const ThreadState *t) {
        /* Never twice in one tick, even with MinResidencyMs=0. */
        return !t->moved || (t->moved_us != ctx->now_us &&
                             ctx->now_us - t->moved_us >= policy_residency_us(ctx->settings));
}

bool policy_cgroup_threads_resident(const PolicyCtx *ctx, const CgroupState *c) {
        for (size_t i = 0; i < c->sample->n_threads; i++)
                if (c->by_sample[i] && !policy_thread_resident(ctx, c->by_sample[i]))
                        return false;
        return true;
}

int policy_mask_llc(const Snapshot *snap, hwloc_const_bitmap_t mask) {
        int llc = -1, cpu;

        if (!mask || hwloc_bitmap_iszero(mask))
                return -1;
        hwloc_bitmap_foreach_begin(cpu, mask) {
                const CpuSample *s = snapshot_cpu(snap, (unsigned) cpu);
                if (!s || s->llc < 0 || (llc >= 0 && s->llc != llc))
                        return -1;
                llc = s->llc;
        }
        hwloc_bitmap_foreach_end();
        return llc;
}

bool policy_kernel_keeps_together(const PolicyCtx *ctx, const CgroupState *c) {
        return ctx->snap->kernel_cache_aware && c->sample && c->sample->n_processes == 1;
}

/* A window is for a cgroup with work enough to keep a CPU of it busy: its
 * threads wake each other and share the window's caches. A light one (a few
 * timer threads) would only queue behind the LLC's other load on the
 * window's cores, where outside a window each wakeup finds the CPU whose
 * task's slice ends first. Measured: cyclictest (two threads, util 50 in
 * all) next to two CPU hogs on 2 CPUs, windowed to one CPU, had a 1.5-4x
 * worse p99 wakeup latency, while its mean wait per CPU received stayed
 * within what the guard lets pass. */
bool policy_demand_too_light(double demand) {
        return demand * 100 < WINDOW_MIN_DEMAND_PERCENT * SCHED_CAPACITY_SCALE;
}

double policy_cgroup_util(const CgroupSample *cg) {
        double u = 0;

        for (size_t i = 0; i < cg->n_threads; i++)
                u += cg->threads[i].util;
        return u;
}

bool policy_cgroup_settled(const PolicyCtx *ctx, const CgroupState *c) {
        double now = 0, floor = ctx->settings->guard_wait_floor * c->sample->n_threads;

        /* The first observation is its own mean. That is no hole: the
         * sampler's first figure for a thread it has not seen before is 0,
         * so a cgroup opted in under load, or a workload starting in an
         * opted-in cgroup, steps up from 0 here too. */
        if (!c->recent_primed)
                return false;
        now = policy_cgroup_util(c->sample);
        return fabs(now - c->recent_util) * 100 <=
               POLICY_SETTLE_PERCENT * MAX(MAX(now, c->recent_util), floor);
}

double policy_cgroup_wakeups(const CgroupSample *cg) {
        double wakeups = 0;

        for (size_t i = 0; i < cg->n_threads; i++)
                wakeups += MAX(cg->threads[i].wakeups, 0.0);
        return wakeups;
}
