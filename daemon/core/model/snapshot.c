/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "snapshot.h"

static const char *const runnable_source_table[_RUNNABLE_SOURCE_MAX] = {
        [RUNNABLE_SOURCE_SCHEDSTAT] = "schedstat",
        [RUNNABLE_SOURCE_DEBUGFS] = "debugfs",
        [RUNNABLE_SOURCE_THREADS] = "threads",
        [RUNNABLE_SOURCE_NONE] = "none",
};

DEFINE_STRING_TABLE_LOOKUP(runnable_source, RunnableSource, _RUNNABLE_SOURCE_MAX);

static const char *const cgroup_policy_table[_CGROUP_POLICY_MAX] = {
        [CGROUP_POLICY_LATENCY] = "latency",
        [CGROUP_POLICY_BALANCED] = "balanced",
};

DEFINE_STRING_TABLE_LOOKUP(cgroup_policy, CgroupPolicy, _CGROUP_POLICY_MAX);

static void cgroup_sample_done(CgroupSample *c) {
        free(c->path);
        hwloc_bitmap_free(c->allowed);
        hwloc_bitmap_free(c->cpus);
        for (size_t i = 0; i < c->n_threads; i++)
                hwloc_bitmap_free(c->threads[i].allowed);
        free(c->threads);
}

Snapshot *snapshot_free(Snapshot *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_llcs; i++)
                hwloc_bitmap_free(s->llcs[i].cpus);
        for (size_t i = 0; i < s->n_cgroups; i++)
                cgroup_sample_done(&s->cgroups[i]);
        free(s->cgroups);
        free(s->llcs);
        free(s->cpus);
        free(s);
        return NULL;
}

const CpuSample *snapshot_cpu(const Snapshot *s, unsigned cpu) {
        size_t lo = 0, hi = s->n_cpus;

        /* Ids are dense on most hosts, and the policy asks thousands of
         * times a tick: on the simulated 1,024-CPU host the search was 3%
         * of a tick. */
        if (cpu < s->n_cpus && s->cpus[cpu].cpu == cpu)
                return &s->cpus[cpu];

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (s->cpus[mid].cpu == cpu)
                        return &s->cpus[mid];
                if (s->cpus[mid].cpu < cpu)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

int snapshot_core_cpus(const Snapshot *s, int core, CpuSet *ret) {
        _cleanup_cpuset_ CpuSet set = hwloc_bitmap_alloc();

        if (!set)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_cpus; i++)
                if (s->cpus[i].core == core && s->cpus[i].online)
                        hwloc_bitmap_set(set, s->cpus[i].cpu);
        *ret = TAKE_PTR(set);
        return 0;
}

int snapshot_online_cpus(const Snapshot *s, CpuSet *ret) {
        _cleanup_cpuset_ CpuSet set = hwloc_bitmap_alloc();

        if (!set)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_cpus; i++)
                if (s->cpus[i].online)
                        hwloc_bitmap_set(set, s->cpus[i].cpu);
        *ret = TAKE_PTR(set);
        return 0;
}

unsigned sis_nr_idle_scan(double x, unsigned w, unsigned p) {
        /* Integer arithmetic exactly as the kernel's update_idle_cpu_scan(), so
         * that our figures match what SIS_UTIL would have computed:
         *   y = 1024 - min(1024, x^2 * p^2 / (10000 * 1024)); nr = w * y / 1024 */
        uint64_t xi = (uint64_t) llround(CLAMP(x, 0.0, (double) SCHED_CAPACITY_SCALE));
        uint64_t t = xi * xi * p * p / (10000ULL * SCHED_CAPACITY_SCALE);
        uint64_t y = SCHED_CAPACITY_SCALE - MIN(t, (uint64_t) SCHED_CAPACITY_SCALE);

        return (unsigned) ((uint64_t) w * y / SCHED_CAPACITY_SCALE);
}
