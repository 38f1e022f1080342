/* SPDX-License-Identifier: MIT */
#include "actuator-mask.h"

bool act_cpuset_equal_on(hwloc_const_bitmap_t a, hwloc_const_bitmap_t b, hwloc_const_bitmap_t online) {
        if (!a || !b)
                return a == b;
        if (hwloc_bitmap_isequal(a, b))
                return true;
        if (!online)
                return false;
        /* Offline CPUs do not count: the kernel reports them in some masks
         * and not in others, and a hotplug is nobody's change of a mask. */
        _cleanup_cpuset_ CpuSet x = hwloc_bitmap_alloc(), y = hwloc_bitmap_alloc();
        if (!x || !y)
                return false;
        hwloc_bitmap_and(x, a, online);
        hwloc_bitmap_and(y, b, online);
        return hwloc_bitmap_isequal(x, y);
}

int act_dup_set(hwloc_const_bitmap_t s, CpuSet *ret) {
        CpuSet d = s ? hwloc_bitmap_dup(s) : NULL;
        if (s && !d)
                return -ENOMEM;
        *ret = d;
        return 0;
}

/* How the kernel composes masks (verified on 6.18; see the comment at
 * cgroup_fixup_threads() in actuator-cpuset.c): a thread's affinity is what
 * it asked for with sched_setaffinity() intersected with its cpuset, or the
 * cpuset's CPUs when that intersection is empty. The threads backend
 * emulates exactly that for its "window", so that the backends behave
 * alike. */
int act_compose(hwloc_const_bitmap_t base, hwloc_const_bitmap_t cg, CpuSet *ret) {
        CpuSet s = hwloc_bitmap_dup(cg);
        if (!s)
                return -ENOMEM;
        if (base) {
                hwloc_bitmap_and(s, s, base);
                if (hwloc_bitmap_iszero(s))
                        hwloc_bitmap_copy(s, cg);
        }
        *ret = s;
        return 0;
}

bool act_is_einval(int r) {
        /* ERANGE: a CPU id beyond what the kernel knows (cpuset.cpus). */
        return r == -EINVAL || r == -ERANGE;
}

bool act_is_eperm(int r) {
        return r == -EPERM || r == -EACCES;
}
