/* SPDX-License-Identifier: MIT */
#pragma once

/* A cgroup's own files: which backend writes its CPUs, reading and writing
 * cpuset.cpus, its parent's effective CPUs, and what it had before steerd's
 * first change. */

#include "actuator-ctx.h"

/* Where the cgroup's CPUs are written: CPUSET, THREADS, or (only when eligible)
 * SYSTEMD. -EPERM for a v2 partition root (never written: unmanaged), -ENOENT
 * when the cgroup is gone. */
int act_cgroup_choose_backend(const RootDir *root, bool live, sd_bus *bus, const char *dir, bool v2,
                              ActuatorBackend *ret);
/* The parent's effective CPUs (v2 cpuset.cpus.effective, v1
 * cpuset.effective_cpus, else cpuset.cpus). */
int act_cgroup_parent_effective(const RootDir *root, const char *dir, bool v2, CpuSet *ret);
/* cpuset.cpus, trimmed ("" on v2 = inherit). */
int act_cgroup_read_cpus_text(const RootDir *root, const char *dir, char **ret);
/* Write cpuset.cpus: libcgroup on the live host, else through the root dir.
 * "" is written as "\n" directly (libcgroup skips empty values). */
int act_cgroup_write_cpus(Actuator *a, const char *dir, const char *text);
/* The record of the cgroup before steerd's first change, for the backend
 * that will change it: its CPUs as text (cpuset.cpus, or systemd's
 * AllowedCPUs) and its effective CPUs. */
int act_cgroup_record(ActCtx *c, const OptedIn *cg, const CgroupSample *cs, ActuatorBackend backend,
                      ActCgroup *ret);
