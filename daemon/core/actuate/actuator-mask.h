/* SPDX-License-Identifier: MIT */
#pragma once

/* Masks as the actuator compares and composes them: pure, no I/O. */

#include "cpuset.h"

/* a == b on the CPUs in online (NULL: all of them). */
bool act_cpuset_equal_on(hwloc_const_bitmap_t a, hwloc_const_bitmap_t b, hwloc_const_bitmap_t online);
/* NULL stays NULL. */
int act_dup_set(hwloc_const_bitmap_t s, CpuSet *ret);
/* The kernel's composition of a thread's own mask with its cpuset: base ∩
 * cg, or cg when that is empty. base NULL = every CPU. */
int act_compose(hwloc_const_bitmap_t base, hwloc_const_bitmap_t cg, CpuSet *ret);
/* The errors that mean "this mask is not valid (any more)". */
bool act_is_einval(int r);
/* The errors that mean "steerd may not change this": the thread or cgroup
 * is left unmanaged. */
bool act_is_eperm(int r);
