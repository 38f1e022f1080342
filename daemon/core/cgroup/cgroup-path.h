/* SPDX-License-Identifier: MIT */
#pragma once

/* Where an operator's cgroup name lives: "/bench1" is looked up under the
 * cgroup2 mount and under the cpuset v1 mount (hybrid hosts have both);
 * an absolute directory path below a cgroup mount is taken as it is.
 * Every directory found is confined to the mounts (cgroup-confine.h). */

#include "cpuset.h"
#include "rootdir.h"

typedef struct CgroupMounts {
        char *v2;        /* cgroup2 mount point, NULL if none */
        char *v1_cpuset; /* cgroup v1 cpuset mount point, NULL if none */
        bool host;       /* read on the live host ("/" root): directories must be on cgroupfs */
} CgroupMounts;

void cgroup_mounts_done(CgroupMounts *m);
/* From ROOT/proc/self/mounts; a mount point that is no canonical absolute
 * path (cgroup_path_canonical()) is ignored. */
int cgroup_mounts_read(const RootDir *root, CgroupMounts *ret);

typedef struct CgroupLocation {
        char *dir; /* absolute directory on the host, e.g. /sys/fs/cgroup/cpuset/bench1 */
        bool v2;
} CgroupLocation;

void cgroup_location_done(CgroupLocation *l);
/* -ENOENT if the cgroup exists in no hierarchy that steerd can steer;
 * CGROUP_NOT_CONFINED (-EXDEV) if the directory it names is refused by
 * cgroup_dir_confined() (why, if not NULL, says why: CGROUP_WHY_MAX). */
int cgroup_resolve_full(const RootDir *root, const CgroupMounts *m, const char *name, CgroupLocation *ret,
                        char *why, size_t why_size);
int cgroup_resolve(const RootDir *root, const CgroupMounts *m, const char *name, CgroupLocation *ret);

/* DIR/NAME through the root, trailing whitespace trimmed. */
int cgroup_read_attr(const RootDir *root, const char *dir, const char *name, char **ret);

/* The CPUs the tasks of the cgroup at dir may use now: v2
 * cpuset.cpus.effective, or, for a cgroup without the cpuset controller, its
 * nearest ancestor's; v1 cpuset.effective_cpus, else cpuset.cpus. -ENOENT
 * when neither the cgroup nor an ancestor has them. The one reader of a
 * cgroup's CPUs: the sampler and the actuator agree. */
int cgroup_effective_cpus(const RootDir *root, const char *dir, bool v2, CpuSet *ret);
