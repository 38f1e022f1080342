/* SPDX-License-Identifier: MIT */
#pragma once

/* sched_{get,set}affinity on a simulated host (steerd --root DIR
 * --affinity-table FILE; tests/sim): the kernel's part played on the
 * fixture's files, so that the actuator's thread actions run end to end
 * where no real thread exists.
 *
 * set: the mask the kernel would give the thread, the request intersected
 * with its cgroup's CPUs (ROOT/proc/TID/cpuset names the cgroup), goes into
 * ROOT/proc/TID/task/TID/status at once, as the kernel's would; an empty
 * intersection is -EINVAL, a thread without a status file -ESRCH, as the
 * syscall says. The request itself is appended to FILE as "TID CPULIST"
 * ("TID all" for every CPU) for the simulator, which composes it again
 * when the cgroup's CPUs change (what the kernel does with a thread's
 * requested mask since 6.2).
 * get: the thread's Cpus_allowed_list. */

#include <sys/types.h>

#include "cpuset.h"
#include "rootdir.h"

typedef struct AffinityTable AffinityTable;

/* path: the request log, created or appended to (outside the root). */
int affinity_table_open(const RootDir *root, const char *path, AffinityTable **ret);
AffinityTable *affinity_table_free(AffinityTable *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(AffinityTable *, affinity_table_free);

int affinity_table_get(const AffinityTable *t, pid_t tid, CpuSet *ret);
/* set NULL: every CPU (thread_set_affinity_all()). */
int affinity_table_set(AffinityTable *t, pid_t tid, hwloc_const_bitmap_t set);
