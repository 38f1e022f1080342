/* SPDX-License-Identifier: MIT */
#pragma once

/* sched_setaffinity(): thread actions, and the threads backend (a cgroup's
 * window applied thread by thread, as the kernel would compose a cpuset). */

#include "actuator-ctx.h"

/* Thread masks may be changed: on the host (the syscalls), or on a
 * simulated one through its affinity table (affinity-table.h). */
bool act_threads_writable(const Actuator *a);
int act_aff_get(const Actuator *a, pid_t tid, CpuSet *ret);
int act_aff_set(const Actuator *a, pid_t tid, hwloc_const_bitmap_t set);
/* Every CPU: the kernel composes it with the cgroup's CPUs. */
int act_aff_set_all(const Actuator *a, pid_t tid);

/* A thread action in two steps, so that a run of them shares one write-ahead
 * save of the state file: prepare records the thread and its intent (go is
 * false when there is nothing to apply: vanished, refused, nothing held);
 * finish, after the save, sets the mask, logs and counts. */
typedef struct ActPrepared {
        bool go;
        bool full_restore; /* the original, not act->cpus */
        pid_t tid;
        uint64_t starttime;
        CpuSet cg_now, before;
} ActPrepared;
int act_prepare_thread_action(ActCtx *c, const OptedIn *cg, const CgroupSample *cs, const Action *act,
                              ActPrepared *ret);
/* A prepared action whose intent could not be recorded (the state file):
 * not made; its intent, or a record made for it, goes. */
void act_cancel_thread_action(ActCtx *c, const ActPrepared *p);
int act_finish_thread_action(ActCtx *c, const OptedIn *cg, const Action *act, ActPrepared *p);
void act_prepared_done(ActPrepared *p);

/* A cgroup-wide action of the threads backend. crec NULL: the first change. */
int act_apply_cgroup_threads(ActCtx *c, const OptedIn *cg, const CgroupSample *cs, ActCgroup *crec,
                             const Action *act);
/* New threads of threads-backend windows, found in the snapshot. */
int act_adopt_new_threads(ActCtx *c);
/* One new thread (proc connector): 1 if its mask was changed. */
int act_adopt_thread(Actuator *a, const ActCgroup *crec, pid_t tid);
/* Before steerd's first cgroup-wide write (cpuset or systemd backend): a
 * thread of the cgroup with a mask of its own (narrower than cg_cpus, the
 * cgroup's CPUs: an operator's taskset) is recorded with that mask as its
 * original. Kernels before 6.2 reset every task of a cpuset whose CPUs are
 * written; the record is what sets it again while the window holds and gives
 * it back after. 1 if recorded. */
int act_record_own_mask(Actuator *a, const char *cgroup, pid_t tid, uint64_t starttime,
                        hwloc_const_bitmap_t cg_cpus);
/* Give a thread its original back if its mask is still steerd's. 1 if it
 * had a mask of its own (not "every CPU"), to be set once more after its
 * cgroup's CPUs are given back, 0 when done otherwise (or
 * nothing to do: gone, someone else's); the caller then forgets it. < 0: the
 * give-back failed and the caller keeps the record. */
int act_release_thread(ActCtx *c, ActThread *t);
