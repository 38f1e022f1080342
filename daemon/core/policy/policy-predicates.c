/* SPDX-License-Identifier: MIT */
/* The questions both the policies and the checker ask, in a leaf file that
 * calls no other file of the engine: the checker must not depend on the code
 * it checks, and the code it checks must ask exactly what it asks. */

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
