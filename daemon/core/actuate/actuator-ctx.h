/* SPDX-License-Identifier: MIT */
#pragma once

/* One apply, check or release against the host: the online CPUs it judges
 * masks on, the report it fills, letting go, the snapshot's lookups, a
 * thread's identity, and the logged save of the state file. */

#include "actuator-ledger.h"

/* A cgroup given back during this apply: its snapshot still shows
 * steerd's window. */
typedef struct ActGivenBack {
        char *cgroup;
        CpuSet cpus;
} ActGivenBack;

typedef struct ActCtx {
        Actuator *a;
        const Snapshot *snap; /* NULL on release */
        CpuSet online;        /* NULL: unknown; masks are then compared as they are */
        ActuatorReport rep;
        ActGivenBack *given_back;
        size_t n_given_back;
} ActCtx;

int act_ctx_init(ActCtx *c, Actuator *a, const Snapshot *snap);
void act_ctx_done(ActCtx *c);
void act_and_online(const ActCtx *c, CpuSet s);
/* A restore whose CPUs cover original (within what is online) gives the
 * exact original back. */
int act_restore_is_full(const ActCtx *c, const Action *act, hwloc_const_bitmap_t original, bool *ret);
/* The cgroup's CPUs were given back (to cpus) during this apply. */
int act_note_given_back(ActCtx *c, const char *cgroup, hwloc_const_bitmap_t cpus);
/* The CPUs a thread of the cgroup may have right now, as far as steerd
 * knows: steerd's window, else what a give-back in this apply restored,
 * else the snapshot's (read live without one). */
int act_cgroup_cpus_now(const ActCtx *c, const char *dir, bool v2, const CgroupSample *cs,
                        const ActCgroup *crec, CpuSet *ret);

int act_report_let_go(ActuatorReport *r, const char *cgroup, pid_t tid, uint64_t starttime);
/* Marked hands-off and reported as let go (tid 0: the whole cgroup). */
int act_let_go(ActCtx *c, const char *cgroup, pid_t tid, uint64_t starttime);
/* EPERM/EACCES: logged once (the mark keeps steerd from trying again),
 * reported as let go. */
int act_mark_unmanaged(ActCtx *c, const char *cgroup, pid_t tid, uint64_t starttime, int error);
void act_log_refused(HandsOff *h, const Action *act);

const CgroupSample *act_snap_cgroup(const Snapshot *snap, const char *name);
const ThreadSample *act_cgroup_thread(const CgroupSample *cs, pid_t tid);

/* Field 22 of ROOT/proc/<tid>/task/<tid>/stat; -ESRCH when the thread is gone. */
int act_thread_read_starttime(const RootDir *root, pid_t tid, uint64_t *ret);
/* 0 if the tid still names that thread, -ESRCH if not. */
int act_thread_check_identity(const Actuator *a, pid_t tid, uint64_t starttime);
/* ROOT/sys/devices/system/cpu/online. */
int act_read_online_cpus(const RootDir *root, CpuSet *ret);

/* actuator_state_save(), logged. */
int act_save_state(Actuator *a);
/* Write-ahead (actuator-ledger.h) needs the state file: false while it
 * cannot be written (probed again on each call while failing). */
bool act_state_writable(Actuator *a);
