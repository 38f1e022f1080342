/* SPDX-License-Identifier: MIT */
#pragma once

/* The kernel's own cache-aware scheduling (the series by Peter Zijlstra,
 * Chen Yu and Tim Chen; CONFIG_SCHED_CACHE): its load balancer keeps a
 * process's threads in the process's preferred LLC. steerd's windows and
 * wake groups for a cgroup of one process would do the same work a second
 * time, or work against it (docs/DECISIONS.md, "The kernel's cache-aware
 * scheduling"). Found by its debugfs knobs (sched/llc_balancing/ in the
 * posted series v3 on, sched/llc_enabled before), else by the build option
 * in /boot/config-RELEASE. */

#include <stdbool.h>

#include "rootdir.h"

typedef struct KernelCacheAware {
        bool present;  /* the kernel has it */
        bool enabled;  /* and it is on (a knob at 0 turns it off) */
        char how[200]; /* how that was found, for status and explain */
} KernelCacheAware;

/* Never fails: what cannot be read is said in `how` ("not found: ..."). */
void kernel_cache_aware_probe(const RootDir *root, KernelCacheAware *ret);
