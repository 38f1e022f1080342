/* SPDX-License-Identifier: MIT */
#include <sched.h>
#include <sys/syscall.h>

#include "actuator-internal.h"
#include "proc-thread.h"

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

int act_affinity_probe_bytes(size_t *ret) {
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

int act_thread_get_affinity(pid_t tid, CpuSet *ret) {
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
                for (size_t cpu = 0; cpu < d.bytes * 8; cpu++)
                        if (CPU_ISSET_S(cpu, d.bytes, d.set))
                                hwloc_bitmap_set(set, (unsigned) cpu);
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

int act_thread_set_affinity(pid_t tid, hwloc_const_bitmap_t set) {
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

int act_thread_set_affinity_all(pid_t tid, size_t affinity_bytes) {
        _cleanup_(dyn_cpuset_done) DynCpuSet d = {};
        int r;

        r = dyn_cpuset_alloc(MAX(affinity_bytes * 8, (size_t) CPU_SETSIZE), &d);
        if (r < 0)
                return r;
        memset(d.set, 0xff, d.bytes);
        return set_affinity(tid, &d);
}

int act_thread_read_starttime(const RootDir *root, pid_t tid, uint64_t *ret) {
        _cleanup_(freep) char *text = NULL;
        char path[80];
        ThreadStat st;
        int r;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int) tid, (int) tid);
        r = rootdir_read_file(root, path, &text, NULL);
        if (r == -ENOENT || r == -ESRCH)
                return -ESRCH;
        if (r < 0)
                return r;
        r = thread_stat_parse(text, path, &st, NULL);
        if (r < 0)
                return r;
        *ret = st.starttime;
        return 0;
}

int act_read_online_cpus(const RootDir *root, CpuSet *ret) {
        _cleanup_(freep) char *text = NULL;
        int r;

        r = rootdir_read_file(root, "/sys/devices/system/cpu/online", &text, NULL);
        if (r < 0)
                return r;
        return cpuset_parse(text, ret);
}
