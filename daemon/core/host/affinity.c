/* SPDX-License-Identifier: MIT */
#include <sched.h>
#include <sys/syscall.h>

#include "affinity.h"

/* ---- sched_{get,set}affinity ---- */

/* cpu_set_t of glibc is fixed at 1024 CPUs; CPU_ALLOC sizes are dynamic, so
 * sparse and large CPU ids work. */
typedef struct DynCpuSet {
        cpu_set_t *set;
        size_t bytes;
} DynCpuSet;

static void dyn_cpuset_done(DynCpuSet *d) {
        if (d->set)
                CPU_FREE(d->set);
        *d = (DynCpuSet){};
}

static int dyn_cpuset_alloc(size_t ncpus, DynCpuSet *ret) {
        cpu_set_t *s = CPU_ALLOC(ncpus);
        if (!s)
                return -ENOMEM;
        size_t bytes = CPU_ALLOC_SIZE(ncpus);
        CPU_ZERO_S(bytes, s);
        *ret = (DynCpuSet){.set = s, .bytes = bytes};
        return 0;
}

int affinity_probe_bytes(size_t *ret) {
        /* The raw syscall returns how many bytes the kernel's cpumask has; it
         * fails with EINVAL while the buffer is smaller than that. */
        for (size_t ncpus = CPU_SETSIZE; ncpus <= (1U << 22); ncpus *= 2) {
                _cleanup_(dyn_cpuset_done) DynCpuSet d = {};
                int r = dyn_cpuset_alloc(ncpus, &d);
                if (r < 0)
                        return r;
                long k = syscall(SYS_sched_getaffinity, 0, d.bytes, d.set);
                if (k > 0) {
                        *ret = (size_t) k;
                        return 0;
                }
                if (errno != EINVAL)
                        return negative_errno();
        }
        return -EINVAL;
}

int thread_get_affinity(pid_t tid, CpuSet *ret) {
        for (size_t ncpus = CPU_SETSIZE; ncpus <= (1U << 22); ncpus *= 2) {
                _cleanup_(dyn_cpuset_done) DynCpuSet d = {};
                int r = dyn_cpuset_alloc(ncpus, &d);
                if (r < 0)
                        return r;
                if (sched_getaffinity(tid, d.bytes, d.set) < 0) {
                        if (errno == EINVAL)
                                continue;
                        return negative_errno();
                }
                _cleanup_cpuset_ CpuSet set = hwloc_bitmap_alloc();
                if (!set)
                        return -ENOMEM;
                /* Word by word: the sampler calls this for every thread. */
                const unsigned long *w = (const unsigned long *) d.set;
                for (size_t i = 0; i < d.bytes / sizeof(unsigned long); i++)
                        if (w[i] != 0)
                                for (size_t b = 0; b < 8 * sizeof(unsigned long); b++)
                                        if (w[i] & (1UL << b))
                                                hwloc_bitmap_set(
                                                        set, (unsigned) (i * 8 * sizeof(unsigned long) + b));
                *ret = TAKE_PTR(set);
                return 0;
        }
        return -EINVAL;
}

static int set_affinity(pid_t tid, const DynCpuSet *d) {
        if (sched_setaffinity(tid, d->bytes, d->set) < 0)
                return negative_errno();
        return 0;
}

int thread_set_affinity(pid_t tid, hwloc_const_bitmap_t set) {
        _cleanup_(dyn_cpuset_done) DynCpuSet d = {};
        int last, cpu, r;

        if (!set || hwloc_bitmap_iszero(set))
                return -EINVAL; /* never empty: DESIGN.md 5.4 */
        last = hwloc_bitmap_last(set);
        if (last < 0)
                return -EINVAL; /* infinite */
        r = dyn_cpuset_alloc(MAX((size_t) last + 1, (size_t) CPU_SETSIZE), &d);
        if (r < 0)
                return r;
        hwloc_bitmap_foreach_begin(cpu, set) {
                CPU_SET_S((size_t) cpu, d.bytes, d.set);
        }
        hwloc_bitmap_foreach_end();
        return set_affinity(tid, &d);
}

int thread_set_affinity_all(pid_t tid, size_t affinity_bytes) {
        _cleanup_(dyn_cpuset_done) DynCpuSet d = {};
        int r;

        r = dyn_cpuset_alloc(MAX(affinity_bytes * 8, (size_t) CPU_SETSIZE), &d);
        if (r < 0)
                return r;
        memset(d.set, 0xff, d.bytes);
        return set_affinity(tid, &d);
}
