/* SPDX-License-Identifier: MIT */
#pragma once

/* The backends that change a cgroup's own CPUs: its cpuset.cpus, or
 * systemd's AllowedCPUs= of its unit. A cgroup-wide write carries the
 * cgroup's threads along (the threads backend records and sets them). */

#include "actuator-ctx.h"

/* cpuset and systemd backends. crec NULL: the first change. */
int act_apply_cgroup_file(ActCtx *c, const OptedIn *cg, const CgroupSample *cs, ActCgroup *crec,
                          ActuatorBackend backend, const Action *act);
/* The cgroup is gone: drop its record, give its threads back. cgroup must
 * not point into the record. */
void act_cgroup_gone(ActCtx *c, const char *cgroup, const char *dir);
/* Give the cgroup's own CPUs back if they are still steerd's. 1 if written. */
int act_release_cgroup_record(ActCtx *c, ActCgroup *crec);
