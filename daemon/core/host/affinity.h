/* SPDX-License-Identifier: MIT */
#pragma once

/* sched_{get,set}affinity with CPU sets of any size (sparse and large CPU
 * ids), as hwloc bitmaps. */

#include <sys/types.h>

#include "cpuset.h"

/* How many bytes the kernel's cpumask has. */
int affinity_probe_bytes(size_t *ret);
int thread_get_affinity(pid_t tid, CpuSet *ret);
/* -EINVAL for an empty set: a mask steerd sets is never empty. */
int thread_set_affinity(pid_t tid, hwloc_const_bitmap_t set);
/* Every CPU the kernel's mask can hold: the kernel composes it with the
 * cgroup's CPUs. */
int thread_set_affinity_all(pid_t tid, size_t affinity_bytes);
